package sim

// Covers maps a checker to the requirements of spec/*.md it tests (the
// [req: id] tags of the prose; `kbkit spec coverage` prints what each
// requirement is tested by).
var Covers = map[string][]string{
	CheckProtocol:    {"protocol.transient-never-decision"},
	CheckConvergence: {"adapter.checker.convergence", "adapter.rebase-held-command", "adapter.concurrent-edit-own-text", "window.behave"},
	CheckExactlyOnce: {"adapter.checker.exactly-once", "adapter.intent-id", "protocol.client-retry-same-envelope",
		"protocol.rejection-final", "protocol.transient-never-decision", "window.transport-resends"},
	CheckRollback:       {"adapter.checker.rollback", "adapter.conflict-roll-back", "window.transport-refusal"},
	CheckRefetch:        {"adapter.checker.refetch"},
	CheckResume:         {"adapter.checker.resume", "adapter.resubscribe-at-seq", "protocol.last-event-id-in-order", "window.transport-missing-echo"},
	CheckOutcomes:       {"adapter.outcomes-report-pending", "protocol.page-outcomes"},
	CheckRecency:        {"protocol.no-stale-reads"},
	CheckDedup:          {"protocol.lost-answer-decided"},
	CheckLocalRejection: {"adapter.checker.local-rejection", "adapter.intent-id"},
	CheckPending:        {"adapter.checker.pending"},
}
