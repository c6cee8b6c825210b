package sim

import (
	"fmt"
	"slices"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/speckit/adapter"
)

// The rules a client window must keep (spec/ADAPTER.md section 7,
// spec/window.md), checked at the seed's end from every state the client
// reported and what its proxy recorded, with the page's log known:
//
//   - local-rejection: an intent the client rejects locally (its id is not
//     pending in the reply, and nothing settled it yet) is a toast with its
//     id in that reply, and is never sent; an intent the reference reducer
//     rejects on what the window rendered is rejected locally, not taken
//     as pending (and sent).
//   - pending: a command leaves `pending` only once its echo, an answer
//     deciding it or a refetch's outcome naming it was delivered to the
//     client (or, unsent, as an undo or redo command reverting a rejected
//     one): otherwise the user's edit is lost, found the first time.
//   - resume: no kb.onPage subscription resumes past the highest seq
//     delivered to the client (it would never be sent the next one), nor
//     past the highest seq the window can have applied (the seq it
//     reported, the snapshots and the events next in order delivered
//     to it: never a seq received past a gap), nor below both a seq the
//     client reported before it (its seq never goes down) and the last
//     event it received.
//   - convergence: every reply's `rendered` is the fold of the log's first
//     `seq` commands with `pending` applied in order, computed by the kit
//     (the client need not report `server`); no reply's `seq` is past the
//     highest seq delivered to the client before it.
//
// Timing: the proxy records an event, an answer or a snapshot before it
// writes it to the client, and the kit notes a reply after it has it, so
// what the client could have known when it computed a reply was recorded
// before the reply's time; a subscription is recorded after every event
// the client had received when it sent it.

// Checkers of the client rules, beside those of checks.go.
const (
	CheckLocalRejection = "local-rejection"
	CheckPending        = "pending"
)

// clientRules is what the rules need of one foreign window.
type clientRules struct {
	intent  *adapter.IntentRequest // the intent whose reply comes next
	replies []clientReply
	settled map[string]int64 // command id -> when its echo, an answer or an outcome first went to the client
	subs    []clientSub
	seen    int64           // the highest seq of its page delivered to the client (events, snapshots)
	rises   []seqAt         // when seen rose, in record order
	events  map[int64]int64 // seq of its page -> when its event was first delivered
	snaps   []seqAt         // its page's snapshots delivered, in record order
}

// seqBound is the highest seq the window can have applied before at,
// from the seq it reported before at (its seq never goes down): that or
// a snapshot delivered before at, whichever is higher, followed by the
// events delivered before at that are next in seq order. An event
// delivered past a hole is not applied until the hole is filled
// (spec/window.md, echo).
func (r *clientRules) seqBound(at int64) int64 {
	var seq int64
	for _, rp := range r.replies {
		if rp.at < at {
			seq = max(seq, rp.seq)
		}
	}
	for _, x := range r.snaps {
		if x.at < at {
			seq = max(seq, x.seq)
		}
	}
	for {
		t, ok := r.events[seq+1]
		if !ok || t >= at {
			return seq
		}
		seq++
	}
}

// seqAt is the highest seq delivered to the client as of a moment.
type seqAt struct{ at, seq int64 }

// seenBefore is the highest seq of its page delivered to the client
// before at.
func (r *clientRules) seenBefore(at int64) int64 {
	var seq int64
	for _, x := range r.rises {
		if x.at >= at {
			break
		}
		seq = x.seq
	}
	return seq
}

// see notes seq delivered at at.
func (r *clientRules) see(at, seq int64) {
	if seq > r.seen {
		r.seen = seq
		r.rises = append(r.rises, seqAt{at, seq})
	}
}

// clientReply is one state the client reported.
type clientReply struct {
	at       int64                  // when the kit had it (ns since the seed began)
	intent   *adapter.IntentRequest // the intent it answers; nil for open and state
	seq      int64
	pending  []string
	rendered kbcore.Doc
	ok       bool // rendered is a document
	toasts   []adapter.Toast
}

// clientSub is a kb.onPage subscription of the window's page.
type clientSub struct {
	at       int64 // when the proxy had it
	after    int64
	hasAfter bool
	seen     int64 // the highest seq delivered to the client before it
}

// reply notes a state the client reported, answering the intent noted
// before it, if any.
func (r *clientRules) reply(at int64, st adapter.ClientState, rendered kbcore.Doc, ok bool) {
	r.replies = append(r.replies, clientReply{at: at, intent: r.intent, seq: st.Seq, pending: slices.Clone(st.Pending),
		rendered: rendered, ok: ok, toasts: slices.Clone(st.Toasts)})
	r.intent = nil
}

// record notes what a proxy record tells the client (in record order).
func (r *clientRules) record(rec proxyRec, page string) {
	if r.settled == nil {
		r.settled = map[string]int64{}
	}
	settle := func(id string) {
		if _, ok := r.settled[id]; !ok && id != "" {
			r.settled[id] = rec.at
		}
	}
	switch rec.kind {
	case recDeliver:
		settle(rec.cmdID)
		if rec.page == page {
			r.see(rec.at, rec.seq)
			if r.events == nil {
				r.events = map[int64]int64{}
			}
			if _, ok := r.events[rec.seq]; !ok {
				r.events[rec.seq] = rec.at
			}
		}
	case recAnswer:
		if !rec.lost && rec.err == "" {
			settle(rec.id)
		}
	case recSnapshot:
		if !rec.lost && rec.err == "" {
			for id := range rec.outcomes {
				settle(id)
			}
			if rec.page == page {
				r.see(rec.at, rec.seq)
				r.snaps = append(r.snaps, seqAt{rec.at, rec.seq})
			}
		}
	case recSubscribe:
		if rec.page == page {
			r.subs = append(r.subs, clientSub{at: rec.at, after: rec.after, hasAfter: rec.hasAfter, seen: r.seen})
		}
	}
}

// prefixDocs are the folds of a page's log: docs[k] of its first k
// commands; nil when the log is not seqs 1..n (the gapless checker says so).
func prefixDocs(ps *pageState) []kbcore.Doc {
	d, _ := kbcore.NewDoc(kbcore.Page{ID: ps.id}, nil)
	docs := []kbcore.Doc{d}
	for i, ev := range ps.log {
		if ev.Seq != int64(i+1) {
			return nil
		}
		d = kbcore.Apply(d, ev.Cmd).Doc
		docs = append(docs, d)
	}
	return docs
}

// checkClientRules checks fw's replies and subscriptions against the log
// of its page (ps).
func (s *sim) checkClientRules(fw *foreignWin, ps *pageState) {
	r := &fw.rules
	docs := prefixDocs(ps)
	logSeq := map[string]int64{}
	for _, ev := range ps.log {
		logSeq[ev.Cmd.ID] = ev.Seq
	}
	body := func(id string) (kbcore.Command, bool) {
		if c, ok := fw.given[id]; ok {
			return c, true
		}
		if o := s.ops[id]; o != nil && o.win == fw.idx {
			return o.cmd, true // an undo or redo command: as it was posted
		}
		return kbcore.Command{}, false
	}
	// fold is what a window at seq with pending renders (spec/window.md,
	// State); false when the log does not reach seq or a pending
	// command's body is unknown (an undo command never posted).
	fold := func(seq int64, pending []string) (kbcore.Doc, bool) {
		if seq < 0 || seq >= int64(len(docs)) {
			return kbcore.Doc{}, false
		}
		d := docs[seq]
		for _, id := range pending {
			c, ok := body(id)
			if !ok {
				return kbcore.Doc{}, false
			}
			if res := kbcore.Apply(d, c); res.Rejected == nil {
				d = res.Doc
			}
		}
		return d, true
	}
	misfold, ahead := false, false
	lost := map[string]bool{}
	var prev *clientReply
	for i := range r.replies {
		rp := &r.replies[i]
		if had := r.seenBefore(rp.at); rp.seq > had && !ahead {
			ahead = true // the first one says it
			s.find(CheckConvergence, "%s at %.3fs reported seq %d, but no seq past %d had been delivered to it (events, snapshots): a window's seq is that of the last event it applied, and a duplicated event is applied once (spec/window.md, State and echo; spec/ADAPTER.md 7)",
				fw.name(), secs(rp.at), rp.seq, had)
		}
		if want, ok := fold(rp.seq, rp.pending); ok && rp.ok && !misfold && !want.Equal(rp.rendered) {
			misfold = true // the first one says it; the later ones follow from it
			s.find(CheckConvergence, "%s at %.3fs reported seq %d with %d pending (%s) and renders a document that is not the fold of the log's first %d commands with its pending commands applied in order (spec/window.md, State: rendered = fold(server, pending); spec/ADAPTER.md 7):\n%s",
				fw.name(), secs(rp.at), rp.seq, len(rp.pending), joinShort(rp.pending), rp.seq, docDiff(want, rp.rendered))
		}
		if prev != nil {
			s.checkLeftPending(fw, prev, rp, lost)
		}
		if rp.intent != nil && rp.intent.ID != "" {
			s.checkLocalRejection(fw, prev, rp, fold, logSeq)
		}
		s.checkUnnamedToasts(fw, rp)
		prev = rp
	}
	// A subscription goes to the kit on the client's socket, beside the
	// adapter's replies and in no order with them: one sent at seq L can
	// arrive after a reply that reports a higher seq (a snapshot came in
	// between). So a subscription is judged against what was delivered
	// before it and against the subscriptions before it, never against
	// the replies: the window's seq never goes down, so neither does the
	// lastEventId it subscribes with (a transport that resumes from its
	// last event, as tRPC's wsLink does, resumes past its first one).
	var floor clientSub
	for _, sub := range r.subs {
		if sub.hasAfter && floor.hasAfter && sub.after < floor.after {
			s.find(CheckResume, "%s subscribed to page %s at %.3fs with lastEventId %d, though it had subscribed with lastEventId %d at %.3fs: its seq never goes down, so it gets events it applied again; a window resubscribes with lastEventId = its seq (spec/window.md; spec/PROTOCOL.md 4.4)",
				fw.name(), shortID(ps.id), secs(sub.at), sub.after, floor.after, secs(floor.at))
		}
		if sub.hasAfter && (!floor.hasAfter || sub.after > floor.after) {
			floor = sub
		}
		if sub.hasAfter && sub.after > sub.seen {
			s.find(CheckResume, "%s subscribed to page %s at %.3fs with lastEventId %d, but no seq past %d had been delivered to it (events, snapshots): the server would never send it seq %d; a window resubscribes after its seq (spec/window.md; spec/PROTOCOL.md 4.4)",
				fw.name(), shortID(ps.id), secs(sub.at), sub.after, sub.seen, sub.seen+1)
		} else if bound := r.seqBound(sub.at); sub.hasAfter && sub.after > bound {
			s.find(CheckResume, "%s subscribed to page %s at %.3fs with lastEventId %d, past its window's seq: it could have applied no seq past %d (the seq it reported, the snapshots and the events next in order delivered to it), so seq %d was received past a hole and seq %d is never sent again; a window resubscribes with lastEventId = its seq, never one received past a gap (spec/window.md; spec/ADAPTER.md 7)",
				fw.name(), shortID(ps.id), secs(sub.at), sub.after, bound, sub.after, bound+1)
		}
	}
}

// checkLeftPending: every id pending in prev and not in rp was settled
// by something delivered to the client before rp.
func (s *sim) checkLeftPending(fw *foreignWin, prev, rp *clientReply, lost map[string]bool) {
	for _, id := range prev.pending {
		if slices.Contains(rp.pending, id) || lost[id] {
			continue
		}
		s.exercise(CheckPending)
		if at, ok := fw.rules.settled[id]; ok && at < rp.at {
			continue
		}
		if fw.undoIDs[id] && s.ops[id] == nil {
			continue // an undo or redo command reverting a rejected one, dropped unsent (spec/window.md, reject)
		}
		lost[id] = true
		what := "never posted"
		if o := s.ops[id]; o != nil {
			what = fmt.Sprintf("posted %d times", o.posts)
		}
		s.find(CheckPending, "%s dropped command %s (%s, %s) from pending between its replies at %.3fs and %.3fs, though no echo, answer, outcome or rejection of it had reached the client: the user's edit is lost (spec/window.md: a command leaves pending by its echo, a snapshot's outcome or a rejection; spec/ADAPTER.md 7)",
			fw.name(), shortID(id), s.cmdType(fw, id), what, secs(prev.at), secs(rp.at))
	}
}

// checkLocalRejection: an intent not pending in its reply (and not
// settled before it) was rejected locally: the reply toasts its id and
// the id is never posted. An intent pending in its reply must not be one
// the reference reducer rejects on what the window rendered: on the fold
// its previous reply stands for, on the one this reply stands for without
// the intent (the client applied it somewhere between the two), and on
// the document the previous reply rendered, and on the folds between the
// two (the log's echoes applied one by one); and this reply renders that
// fold (the intent skipped). A client that renders wrong, and so accepts
// what it should not, is the convergence checker's.
func (s *sim) checkLocalRejection(fw *foreignWin, prev, rp *clientReply, fold func(int64, []string) (kbcore.Doc, bool), logSeq map[string]int64) {
	id := rp.intent.ID
	c := fw.given[id]
	if !slices.Contains(rp.pending, id) {
		if at, ok := fw.rules.settled[id]; ok && at < rp.at {
			return // decided before the client answered
		}
		s.exercise(CheckLocalRejection)
		toasted := slices.ContainsFunc(rp.toasts, func(t adapter.Toast) bool { return t.ID == id })
		if !toasted {
			s.find(CheckLocalRejection, "%s rejected intent %s (%s %s) locally at %.3fs (it is not pending in the reply) and the reply shows no toast with its id: a local rejection is a toast (spec/ADAPTER.md 7; spec/window.md, local)",
				fw.name(), shortID(id), c.Type, clip(c.Payload), secs(rp.at))
		}
		if o := s.ops[id]; o != nil && o.win == fw.idx {
			s.find(CheckLocalRejection, "%s rejected intent %s (%s) locally at %.3fs and then posted it (%d kb.command calls): a local rejection sends nothing (spec/ADAPTER.md 7)",
				fw.name(), shortID(id), c.Type, secs(rp.at), o.posts)
		}
		return
	}
	if prev == nil || c.ID == "" {
		return
	}
	before, ok1 := fold(rp.seq, slices.DeleteFunc(slices.Clone(rp.pending), func(p string) bool { return p == id }))
	earlier, ok2 := fold(prev.seq, prev.pending)
	if !ok1 || !ok2 {
		return
	}
	r1, r2 := kbcore.Apply(before, c), kbcore.Apply(earlier, c)
	if r1.Rejected == nil || r2.Rejected == nil || !prev.ok || !rp.ok ||
		kbcore.Apply(prev.rendered, c).Rejected == nil || !rp.rendered.Equal(before) {
		return
	}
	// The states between the two replies: the echoes from prev.seq to
	// rp.seq applied one by one, each own one leaving pending.
	for seq := prev.seq + 1; seq < rp.seq; seq++ {
		var q []string
		for _, p := range prev.pending {
			if at := logSeq[p]; slices.Contains(rp.pending, p) || at == 0 || at > seq {
				q = append(q, p)
			}
		}
		if d, ok := fold(seq, q); !ok || kbcore.Apply(d, c).Rejected == nil {
			return
		}
	}
	s.exercise(CheckLocalRejection)
	s.find(CheckLocalRejection, "%s took intent %s (%s %s) as pending at %.3fs, though the reducer rejects it (%s) on what the window rendered (seq %d, %d pending): a local rejection is a toast, nothing is sent (spec/ADAPTER.md 7; spec/window.md, local)",
		fw.name(), shortID(id), c.Type, clip(c.Payload), secs(rp.at), r1.Rejected.Code, rp.seq, len(rp.pending)-1)
}

// checkUnnamedToasts: the toasts of an undo's or a redo's checks (1) to
// (3) issue nothing and name no command (spec/window.md, Events): a
// reply's nothing-to-undo, nothing-to-redo and missing-ids toasts, and
// the duplicate-id toast of a reply to an undo or a redo, carry no id.
func (s *sim) checkUnnamedToasts(fw *foreignWin, rp *clientReply) {
	undo := rp.intent != nil && (rp.intent.Intent == "undo" || rp.intent.Intent == "redo")
	for _, t := range rp.toasts {
		switch {
		case t.Code == "nothing-to-undo" || t.Code == "nothing-to-redo" || t.Code == "missing-ids":
		case t.Code == "duplicate-id" && undo:
		default:
			continue
		}
		s.exercise(CheckLocalRejection)
		if t.ID != "" {
			s.find(CheckLocalRejection, "%s showed a %s toast with id %s at %.3fs: the toasts of an undo's or a redo's checks name no command (spec/window.md, Events; spec/ADAPTER.md 7)",
				fw.name(), t.Code, shortID(t.ID), secs(rp.at))
		}
	}
}

func (s *sim) cmdType(fw *foreignWin, id string) string {
	if c, ok := fw.given[id]; ok {
		return c.Type
	}
	if o := s.ops[id]; o != nil {
		return o.cmd.Type
	}
	return "an undo or redo command"
}

func secs(ns int64) float64 { return float64(ns) / 1e9 }

func joinShort(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	out := ""
	for i, id := range shortIDs(ids) {
		if i > 0 {
			out += " "
		}
		out += id
	}
	return out
}
