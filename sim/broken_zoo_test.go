package sim

import "testing"

// The zoo's broken servers (sim/broken/mutate_zoo.go): published
// anomalies of real sync engines, each caught by the checker named.

// A kb.page answered from an older snapshot (a lagging replica): the
// recency checker sees a refetch answer a seq below one the server had
// already acknowledged.
func TestBrokenStalePage(t *testing.T) {
	runs := runMutated(t, variant(t, "stale-page"), Options{Faults: true, Steps: 150}, seedRange(1, 2)...)
	requireExercised(t, runs)
	requireCaught(t, runs, CheckRecency)
	requireFinding(t, runs, CheckRecency, "but the server had revealed seq")
}

// Half a plan: after a rename or merge is acknowledged, the other pages
// answer from before it until they get a command of their own. The
// simulator reads every page's head after such a command: recency.
func TestBrokenSplitPlan(t *testing.T) {
	runs := runMutated(t, variant(t, "split-plan"), Options{Steps: 200}, seedRange(1, 3)...)
	requireExercised(t, runs)
	requireCaught(t, runs, CheckRecency)
}

// A subscription resumed behind its lastEventId: the seq goes backwards.
func TestBrokenResumeBehind(t *testing.T) {
	runs := runMutated(t, variant(t, "resume-behind"), Options{Faults: true}, seedRange(1, 2)...)
	requireExercised(t, runs)
	requireCaughtWhenExercised(t, runs, CheckResume)
}

// An edit acknowledged and never committed: exactly-once finds the
// acknowledged id missing from the log.
func TestBrokenAckWithoutCommit(t *testing.T) {
	runs := runMutated(t, variant(t, "ack-without-commit"), Options{}, seedRange(1, 2)...)
	requireExercised(t, runs)
	requireCaught(t, runs, CheckExactlyOnce)
}
