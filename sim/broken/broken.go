package broken

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/subspace/kbkit/sim/internal/wsrelay"
	"github.com/subspace/kbkit/target"
)

// brokenVariants are the deliberately broken servers of mutate.go, by name.
var brokenVariants = map[string]func() Mutation{
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

// Variants lists the names New and Variant accept.
func Variants() []string {
	out := make([]string, 0, len(brokenVariants))
	for n := range brokenVariants {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// New puts tgt behind a proxy that breaks one guarantee of
// spec/PROTOCOL.md, to watch kbkit's checkers and reports catch it (the
// simulator's tests use the same variants): double-echo logs every
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
func New(tgt target.Target, name string) (target.Target, func(), error) {
	mk, ok := brokenVariants[name]
	if !ok {
		return nil, nil, fmt.Errorf("%w: no broken-server variant %q (one of %s)", target.ErrCannotRun, name, strings.Join(Variants(), ", "))
	}
	p := NewProxy(tgt, mk())
	return p, p.Close, nil
}

// Variant returns the constructor of the named variant's mutation.
func Variant(name string) (func() Mutation, bool) {
	mk, ok := brokenVariants[name]
	return mk, ok
}

// AtRest is the control: a mutation that sends all traffic through every
// hook of the proxy (commands, answers, client and server WebSocket
// messages, events decoded and encoded again), each changing nothing.
func AtRest() Mutation {
	return Mutation{
		command: func(_ string, body []byte) []byte { return body },
		response: func(_ string, body []byte) []byte {
			return rewriteData(body, func(map[string]json.RawMessage) bool { return true })
		},
		upstream: func(b []byte) []byte { return b },
		stream: func(string) streamMutator {
			return mapEvents(func(ev wsrelay.Event) wsrelay.Event { return ev })
		},
	}
}

// Fired counts the mutations made (commands rewritten, events doubled,
// swapped or dropped): zero means the run did not exercise the bug.
func (m Mutation) Fired() int64 {
	if m.fired == nil {
		return 0
	}
	return m.fired.Load()
}
