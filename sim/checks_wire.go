package sim

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/kbcore"
)

// The checks in this file watch the wire while the seed runs, where the
// protocol suite (wiresuite) checks it rule by rule: what an
// answer, an echo, a resumed subscription or a refetch says is compared
// with what the server had already told the simulator. Each finding goes
// to a checker; a checker that was never given anything to check in a
// seed is reported skipped.

// Checkers of the wire, beside those of checks.go.
const (
	// CheckResume: a subscription opened with lastEventId N delivers
	// N+1, N+2, ... (nothing <= N, no hole), each event tracked with
	// result.id = its seq (spec/PROTOCOL.md 4.4).
	CheckResume = "resume"
	// CheckOutcomes: a refetch's outcomes list every pending id the
	// server had already decided, with that decision, rejections
	// included (4.2).
	CheckOutcomes = "outcomes"
	// CheckDedup: a retry of a decided id gets the original decision; a
	// committed one answers duplicate: true with the original seq (4.1).
	CheckDedup = "dedup"
	// CheckRecency: kb.page answers a snapshot at or past every seq of
	// the page the server had revealed before the request (4.2).
	CheckRecency = "recency"
)

// checkRecency checks a kb.page answer of page at seq against floor, the
// highest seq of the page the server had acknowledged or answered before
// the request was sent.
func (s *sim) checkRecency(who, page string, floor, seq int64) {
	if floor <= 0 {
		return
	}
	s.exercise(CheckRecency)
	if seq < floor {
		s.find(CheckRecency, "%s kb.page of page %s answered seq %d, but the server had revealed seq %d of it before the request", who, shortID(page), seq, floor)
	}
}

// verdict is what the server answered for an id, first known from an
// answer (delivered or lost by a fault), an echo or a refetch's outcome.
type verdict struct {
	known    bool
	seq      int64
	rejected string
	at       int64 // when it was known (ns since the seed began)
}

func (v verdict) String() string {
	if v.rejected != "" {
		return "rejected " + v.rejected
	}
	return fmt.Sprintf("committed at seq %d", v.seq)
}

// find records a finding of checker, made while the seed ran.
func (s *sim) find(checker, format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	s.logf("FINDING %s: %s", checker, line)
	s.found[checker] = append(s.found[checker], line)
}

// exercise counts that checker had something to check.
func (s *sim) exercise(checker string) { s.exercised[checker]++ }

// learn records the server's verdict on id if none was known.
func (s *sim) learn(id string, v verdict) { s.learnAt(id, v, s.now()) }

// learnAt records the server's verdict on id, known since at (ns since
// the seed began), if none was known.
func (s *sim) learnAt(id string, v verdict, at int64) {
	if o := s.ops[id]; o != nil && !o.srv.known {
		v.known, v.at = true, at
		o.srv = v
	}
}

// checkAnswer checks a kb.command answer (delivered to the window or lost
// by a fault) against what the server had said about the id before.
func (s *sim) checkAnswer(sc *sendCall) {
	o := s.ops[sc.c.ID]
	if o == nil || sc.err != nil {
		return
	}
	id := shortID(sc.c.ID)
	before := o.srv
	switch {
	case before.known && before.rejected != "":
		s.exercise(CheckDedup)
		if sc.rej == nil || sc.rej.Code != before.rejected {
			s.find(CheckDedup, "w%d retry of %s (%s), rejected before with %s, answered %s", sc.w.idx, id, sc.c.Type, before.rejected, answerString(sc))
		} else {
			s.stats.RetriedRejections++
		}
	case before.known:
		s.exercise(CheckDedup)
		if sc.rej != nil || sc.ack.Seq != before.seq || !sc.ack.Duplicate {
			s.find(CheckDedup, "w%d retry of %s (%s), committed before at seq %d, answered %s (want seq %d with duplicate: true)",
				sc.w.idx, id, sc.c.Type, before.seq, answerString(sc), before.seq)
		} else {
			s.stats.Duplicates++
		}
	case o.posts == 1 && sc.rej == nil && sc.ack.Duplicate:
		s.exercise(CheckDedup)
		s.find(CheckDedup, "w%d first post of %s (%s) answered seq %d with duplicate: true", sc.w.idx, id, sc.c.Type, sc.ack.Seq)
	}
	if sc.rej != nil {
		s.learn(sc.c.ID, verdict{rejected: sc.rej.Code})
	} else {
		s.learn(sc.c.ID, verdict{seq: sc.ack.Seq})
	}
}

func answerString(sc *sendCall) string {
	if sc.rej != nil {
		return "rejected " + sc.rej.Code
	}
	if sc.ack.Duplicate {
		return fmt.Sprintf("seq %d (duplicate)", sc.ack.Seq)
	}
	return fmt.Sprintf("seq %d", sc.ack.Seq)
}

// checkStream checks an event of w's current subscription: it follows
// the subscription's last seq (the lastEventId it was opened with, at
// first) and is tracked with its seq. It reports whether the window may
// use the event (a replayed seq it already has is dropped).
func (s *sim) checkStream(w *win, ev client.Event) bool {
	if ev.TrackedID != strconv.FormatInt(ev.Seq, 10) {
		s.find(CheckResume, "w%d event seq %d on page %s is tracked with result.id %q (a tRPC client resumes from it)", w.idx, ev.Seq, shortID(s.pages[w.page]), ev.TrackedID)
	}
	first := w.subLast == w.subAfter
	if first && w.subAfter > 0 {
		s.exercise(CheckResume)
	}
	switch {
	case ev.Seq <= w.subLast && first:
		s.find(CheckResume, "w%d subscribed to page %s with lastEventId %d, first event is seq %d", w.idx, shortID(s.pages[w.page]), w.subAfter, ev.Seq)
	case ev.Seq <= w.subLast:
		s.find(CheckResume, "w%d subscription to page %s (lastEventId %d) delivered seq %d after seq %d", w.idx, shortID(s.pages[w.page]), w.subAfter, ev.Seq, w.subLast)
	case ev.Seq > w.subLast+1:
		s.find(CheckResume, "w%d subscription to page %s (lastEventId %d) skipped from seq %d to %d", w.idx, shortID(s.pages[w.page]), w.subAfter, w.subLast, ev.Seq)
	}
	if ev.Seq <= w.subLast {
		return false
	}
	w.subLast = ev.Seq
	return true
}

// checkEcho checks an echo against what the server said of its id: a
// command acknowledged with seq N is echoed at N; a rejected one never.
func (s *sim) checkEcho(w *win, ev client.Event) {
	o := s.ops[ev.Cmd.ID]
	if o == nil || !o.srv.known {
		s.learn(ev.Cmd.ID, verdict{seq: ev.Seq})
		return
	}
	switch {
	case o.srv.rejected != "":
		s.find(CheckExactlyOnce, "w%d echo of %s (%s) at seq %d, but the server rejected it (%s)", w.idx, shortID(o.id), o.cmd.Type, ev.Seq, o.srv.rejected)
	case o.srv.seq != ev.Seq:
		s.find(CheckExactlyOnce, "w%d echo of %s (%s) at seq %d, but the server acknowledged it as seq %d", w.idx, shortID(o.id), o.cmd.Type, ev.Seq, o.srv.seq)
	}
}

// expectOutcomes returns the verdicts the server owes a refetch of these
// pending ids: those it had decided by now.
func (s *sim) expectOutcomes(ids []string) map[string]verdict {
	want := map[string]verdict{}
	for _, id := range ids {
		if o := s.ops[id]; o != nil && o.srv.known {
			want[id] = o.srv
		}
	}
	return want
}

// checkOutcomes compares a refetch's outcomes with the verdicts owed.
func (s *sim) checkOutcomes(w *win, want map[string]verdict, snap client.Snapshot) {
	s.compareOutcomes(fmt.Sprintf("w%d", w.idx), s.pages[w.page], want, snap.Seq, snap.Outcomes, s.now())
}

// compareOutcomes compares the outcomes of a refetch of page by who, at
// seq, with the verdicts owed; the verdicts it reports are known from at.
func (s *sim) compareOutcomes(who, pageID string, want map[string]verdict, seq int64, outcomes map[string]kbcore.Outcome, at int64) {
	if len(want) > 0 {
		s.exercise(CheckOutcomes)
	}
	page := shortID(pageID)
	for id, v := range want {
		got, ok := outcomes[id]
		switch {
		case !ok:
			s.find(CheckOutcomes, "%s refetch of page %s (seq %d) has no outcome for pending %s, which the server had %s", who, page, seq, shortID(id), v)
		case v.rejected != "" && (got.Rejected == nil || got.Rejected.Code != v.rejected):
			s.find(CheckOutcomes, "%s refetch of page %s: outcome of %s is %s, the server had rejected it (%s)", who, page, shortID(id), outcomeString(got), v.rejected)
		case v.rejected == "" && (got.Rejected != nil || got.Seq != v.seq):
			s.find(CheckOutcomes, "%s refetch of page %s: outcome of %s is %s, the server had committed it at seq %d", who, page, shortID(id), outcomeString(got), v.seq)
		case v.rejected != "":
			s.stats.RejectedOutcomes++
		}
	}
	for id, got := range outcomes {
		if got.Rejected == nil && got.Seq > seq {
			s.find(CheckOutcomes, "%s refetch of page %s at seq %d reports %s committed at seq %d, past the snapshot", who, page, seq, shortID(id), got.Seq)
		}
		if got.Rejected != nil {
			s.learnAt(id, verdict{rejected: got.Rejected.Code}, at)
		} else {
			s.learnAt(id, verdict{seq: got.Seq}, at)
		}
	}
}

// checkForeignOutcomes checks the outcomes of a foreign window's refetch
// (the proxy's record of its kb.page answer): every pending id whose
// verdict the kit knew before the request arrived must be reported.
func (s *sim) checkForeignOutcomes(fw *foreignWin, r proxyRec) {
	want := map[string]verdict{}
	for _, id := range r.pending {
		if o := s.ops[id]; o != nil && o.srv.known && o.srv.at < r.reqAt {
			want[id] = o.srv
		}
	}
	s.compareOutcomes(fw.name(), r.page, want, r.seq, r.outcomes, r.at)
}

func outcomeString(o kbcore.Outcome) string {
	if o.Rejected != nil {
		return "rejected " + o.Rejected.Code
	}
	return fmt.Sprintf("seq %d", o.Seq)
}

// canonicalDoc reports how a kb.page document's bytes differ from the
// canonical encoding of want (spec/README.md 1); "" when they do not.
// White space between tokens is not part of the encoding.
func canonicalDoc(raw json.RawMessage, want kbcore.Doc) string {
	canon, err := want.MarshalJSON()
	if err != nil {
		return err.Error()
	}
	if d := kbcore.CanonicalMismatch(raw, canon); d != "" {
		return "\n  " + d
	}
	return ""
}
