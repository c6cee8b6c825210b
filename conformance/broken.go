package conformance

import (
	"fmt"
	"sort"
	"strings"
)

// brokenVariants are the deliberately broken servers of mutate.go, by name.
var brokenVariants = map[string]func() mutation{
	"double-echo":            mutDoubleEcho,
	"reorder":                mutReorder,
	"skip-dedup":             mutSkipDedup,
	"drop-derived":           mutDropDerived,
	"no-own-echo":            mutNoOwnEcho,
	"renumber":               mutRenumber,
	"ack-seq":                mutAckSeq,
	"ignore-last-event-id":   mutIgnoreLastEventID,
	"untracked-events":       mutUntracked(false),
	"event-id-not-seq":       mutUntracked(true),
	"no-duplicate-flag":      mutNoDuplicateFlag,
	"non-canonical-page":     mutNonCanonicalPage,
	"drop-rejected-outcomes": mutDropRejectedOutcomes,
	"lose-cells":             mutLoseCells,
	"no-answer":              mutNoAnswer,
	"refuse-sockets":         mutRefuseSockets,
}

// BrokenVariants lists the names Broken accepts.
func BrokenVariants() []string {
	out := make([]string, 0, len(brokenVariants))
	for n := range brokenVariants {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Broken puts target behind a proxy that breaks one guarantee of
// spec/PROTOCOL.md, to watch kbkit's checkers and reports catch it (the
// tests of this package use the same variants): double-echo logs every
// command of seq 3 mod 8 twice, reorder swaps the commands of seqs 4 and
// 5 mod 10, skip-dedup applies a retried command again, drop-derived
// never publishes derived commands, no-own-echo never echoes a device's
// commands to that device, renumber loses events and renumbers the rest
// so that no gap shows, ack-seq acknowledges some commands with another
// seq than their echo's, ignore-last-event-id replays a resumed
// subscription from seq 1, untracked-events and event-id-not-seq send
// events without result.id or with another one than the seq,
// no-duplicate-flag answers a retried committed id without duplicate:
// true, non-canonical-page sends kb.page documents out of canonical key
// and node order, drop-rejected-outcomes leaves rejections out of a
// refetch's outcomes, lose-cells serves kb.page without table cells and
// code outputs, no-answer stops answering kb.command after 20
// calls, refuse-sockets refuses every WebSocket. The returned func stops
// the proxy.
func Broken(target Target, name string) (Target, func(), error) {
	mk, ok := brokenVariants[name]
	if !ok {
		return nil, nil, fmt.Errorf("%w: no broken-server variant %q (one of %s)", ErrCannotRun, name, strings.Join(BrokenVariants(), ", "))
	}
	p := newMutatingProxy(target, mk())
	return p, p.Close, nil
}
