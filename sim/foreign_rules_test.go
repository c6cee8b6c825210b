package sim

import (
	"strings"
	"testing"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/speckit/adapter"
)

// The client rules (foreign_rules.go) on hand-made histories: what was
// delivered to the client before a reply counts, what came after does
// not; a local rejection toasts and sends nothing; a subscription never
// resumes past what was delivered; rendered is the fold of the log.
func TestClientRules(t *testing.T) {
	const page = "p1"
	create := func(id, node string) kbcore.Command {
		return kbcore.Command{ID: id, Type: kbcore.TypeCreateAfter, Payload: mustJSON(map[string]any{"node": node, "text": ""})}
	}
	edit := func(id, node, text string) kbcore.Command {
		return kbcore.Command{ID: id, Type: kbcore.TypeEditText, Payload: mustJSON(map[string]any{"node": node, "text": text})}
	}
	c1 := create("c1", "n1")
	a := edit("a", "n1", "A")
	cp := kbcore.Command{ID: "cp", Type: kbcore.TypeCreatePage, Payload: mustJSON(map[string]any{"title": "T"})}
	ps := &pageState{id: page, log: []client.Event{{Seq: 1, Cmd: cp}, {Seq: 2, Cmd: c1}, {Seq: 3, Cmd: a}}}
	docs := prefixDocs(ps)
	if docs[1].Equal(docs[0]) || docs[2].Equal(docs[1]) || docs[3].Equal(docs[2]) {
		t.Fatal("the log's commands change nothing")
	}
	withA := docs[2]
	if r := kbcore.Apply(withA, a); r.Rejected == nil {
		withA = r.Doc
	}
	missing := edit("b", "nope", "B") // the reducer rejects it: no node nope

	type rec = proxyRec
	for _, tc := range []struct {
		name    string
		replies []clientReply
		recs    []rec
		posted  []string
		checker string // "" = no finding
		want    string
		// unseen: the history is only recs; else the seqs its replies
		// report were delivered before them (a snapshot at the start).
		unseen bool
	}{
		{name: "settled by an echo before the reply",
			replies: []clientReply{{at: 10, seq: 2, pending: []string{"a"}, rendered: withA, ok: true}, {at: 30, seq: 3, rendered: docs[3], ok: true}},
			recs:    []rec{{kind: recDeliver, at: 20, page: page, seq: 3, cmdID: "a"}}},
		{name: "dropped before anything settled it",
			replies: []clientReply{{at: 10, seq: 2, pending: []string{"a"}, rendered: withA, ok: true}, {at: 30, seq: 2, rendered: docs[2], ok: true}},
			recs:    []rec{{kind: recDeliver, at: 40, page: page, seq: 3, cmdID: "a"}},
			checker: CheckPending, want: "dropped command a"},
		{name: "a lost answer settles nothing",
			replies: []clientReply{{at: 10, seq: 2, pending: []string{"a"}, rendered: withA, ok: true}, {at: 30, seq: 2, rendered: docs[2], ok: true}},
			recs:    []rec{{kind: recAnswer, at: 20, id: "a", seq: 3, lost: true}},
			checker: CheckPending, want: "dropped command a"},
		{name: "an outcome settles it",
			replies: []clientReply{{at: 10, seq: 2, pending: []string{"a"}, rendered: withA, ok: true}, {at: 30, seq: 3, rendered: docs[3], ok: true}},
			recs:    []rec{{kind: recSnapshot, at: 20, page: page, seq: 3, outcomes: map[string]kbcore.Outcome{"a": {Seq: 3}}}}},
		{name: "a local rejection toasted",
			replies: []clientReply{{at: 10, seq: 2, rendered: docs[2], ok: true},
				{at: 20, seq: 2, rendered: docs[2], ok: true, intent: &adapter.IntentRequest{ID: "b"}, toasts: []adapter.Toast{{Code: "node-not-found", ID: "b"}}}}},
		{name: "a local rejection without a toast",
			replies: []clientReply{{at: 10, seq: 2, rendered: docs[2], ok: true}, {at: 20, seq: 2, rendered: docs[2], ok: true, intent: &adapter.IntentRequest{ID: "b"}}},
			checker: CheckLocalRejection, want: "shows no toast"},
		{name: "a local rejection sent",
			replies: []clientReply{{at: 10, seq: 2, rendered: docs[2], ok: true},
				{at: 20, seq: 2, rendered: docs[2], ok: true, intent: &adapter.IntentRequest{ID: "b"}, toasts: []adapter.Toast{{Code: "node-not-found", ID: "b"}}}},
			posted:  []string{"b"},
			checker: CheckLocalRejection, want: "then posted it"},
		{name: "a command the reducer rejects taken as pending",
			replies: []clientReply{{at: 10, seq: 2, rendered: docs[2], ok: true}, {at: 20, seq: 2, pending: []string{"b"}, rendered: docs[2], ok: true, intent: &adapter.IntentRequest{ID: "b"}}},
			checker: CheckLocalRejection, want: "took intent b"},
		{name: "rendered is not the fold",
			replies: []clientReply{{at: 10, seq: 3, rendered: docs[2], ok: true}},
			checker: CheckConvergence, want: "not the fold of the log's first 3"},
		{name: "reports a seq delivered to it",
			recs:    []rec{{kind: recDeliver, at: 5, page: page, seq: 3, cmdID: "a"}},
			replies: []clientReply{{at: 10, seq: 3, rendered: docs[3], ok: true}}, unseen: true},
		{name: "reports a seq past what was delivered to it",
			recs:    []rec{{kind: recDeliver, at: 5, page: page, seq: 2, cmdID: "c1"}, {kind: recDeliver, at: 15, page: page, seq: 3, cmdID: "a"}},
			replies: []clientReply{{at: 10, seq: 3, rendered: docs[3], ok: true}}, unseen: true,
			checker: CheckConvergence, want: "reported seq 3, but no seq past 2"},
		{name: "resumes at what it has",
			recs: []rec{{kind: recDeliver, at: 3, page: page, seq: 1, cmdID: "cp"}, {kind: recDeliver, at: 4, page: page, seq: 2, cmdID: "c1"},
				{kind: recDeliver, at: 5, page: page, seq: 3, cmdID: "a"}, {kind: recSubscribe, at: 6, page: page, after: 3, hasAfter: true}}},
		{name: "resumes past a gap",
			replies: []clientReply{{at: 4, seq: 1, rendered: docs[1], ok: true}},
			recs:    []rec{{kind: recDeliver, at: 5, page: page, seq: 3, cmdID: "a"}, {kind: recSubscribe, at: 6, page: page, after: 3, hasAfter: true}},
			checker: CheckResume, want: "it could have applied no seq past 1"},
		{name: "resumes after a snapshot and the events next to it",
			replies: []clientReply{{at: 4, seq: 1, rendered: docs[1], ok: true}},
			recs: []rec{{kind: recDeliver, at: 5, page: page, seq: 3, cmdID: "a"}, {kind: recSnapshot, at: 7, page: page, seq: 2},
				{kind: recSubscribe, at: 8, page: page, after: 3, hasAfter: true}}},
		{name: "an undo's check toasts no id",
			replies: []clientReply{{at: 10, seq: 2, rendered: docs[2], ok: true, intent: &adapter.IntentRequest{Intent: "undo", IDs: []string{"u1"}},
				toasts: []adapter.Toast{{Code: "nothing-to-undo"}}}}},
		{name: "an undo's check toasts an id",
			replies: []clientReply{{at: 10, seq: 2, rendered: docs[2], ok: true, intent: &adapter.IntentRequest{Intent: "undo", IDs: []string{"u1"}},
				toasts: []adapter.Toast{{Code: "duplicate-id", ID: "u1"}}}},
			checker: CheckLocalRejection, want: "showed a duplicate-id toast with id u1"},
		{name: "a subscription sent before a reply that reports past it",
			recs:    []rec{{kind: recDeliver, at: 5, page: page, seq: 3, cmdID: "a"}, {kind: recSubscribe, at: 12, page: page, after: 2, hasAfter: true}},
			replies: []clientReply{{at: 10, seq: 3, rendered: docs[3], ok: true}}, unseen: true},
		{name: "resumes below a lastEventId it subscribed with",
			recs: []rec{{kind: recDeliver, at: 3, page: page, seq: 1, cmdID: "cp"}, {kind: recDeliver, at: 4, page: page, seq: 2, cmdID: "c1"},
				{kind: recDeliver, at: 5, page: page, seq: 3, cmdID: "a"}, {kind: recSubscribe, at: 6, page: page, after: 3, hasAfter: true},
				{kind: recSubscribe, at: 12, page: page, after: 2, hasAfter: true}},
			replies: []clientReply{{at: 10, seq: 3, rendered: docs[3], ok: true}}, unseen: true,
			checker: CheckResume, want: "lastEventId 2, though it had subscribed with lastEventId 3"},
		{name: "resumes past what it has",
			recs:    []rec{{kind: recDeliver, at: 5, page: page, seq: 2, cmdID: "c1"}, {kind: recSubscribe, at: 6, page: page, after: 3, hasAfter: true}},
			checker: CheckResume, want: "lastEventId 3, but no seq past 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &sim{found: map[string][]string{}, exercised: map[string]int{}, ops: map[string]*op{}}
			fw := &foreignWin{idx: 1, line: "test", given: map[string]kbcore.Command{"a": a, "b": missing}, undoIDs: map[string]bool{}}
			if !tc.unseen {
				var seq int64
				for _, rp := range tc.replies {
					seq = max(seq, rp.seq)
				}
				fw.rules.record(rec{kind: recSnapshot, at: 1, page: page, seq: seq}, page)
			}
			for _, r := range tc.recs {
				fw.rules.record(r, page)
			}
			for _, id := range tc.posted {
				s.ops[id] = &op{id: id, page: page, cmd: fw.given[id], win: fw.idx, posts: 1}
			}
			fw.rules.replies = tc.replies
			s.checkClientRules(fw, ps)
			for name, found := range s.found {
				if name != tc.checker {
					t.Errorf("%s found: %v", name, found)
				}
			}
			if tc.checker != "" && (len(s.found[tc.checker]) == 0 || !strings.Contains(s.found[tc.checker][0], tc.want)) {
				t.Errorf("%s found %v, want a finding saying %q", tc.checker, s.found[tc.checker], tc.want)
			}
		})
	}
}
