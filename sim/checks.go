package sim

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/kbcore"
)

// Checker names, as reports print them.
const (
	CheckProtocol    = "protocol"
	CheckConvergence = "convergence"
	CheckProjection  = "projection"
	CheckGapless     = "gapless"
	CheckExactlyOnce = "exactly-once"
	CheckRollback    = "rollback"
	CheckRefetch     = "refetch"
	CheckLinear      = "linearizability"
)

type pageState struct {
	id   string
	log  []client.Event
	snap client.Snapshot
	fold kbcore.Doc
	err  string
}

// readLog reads a page's whole log through fresh subscriptions, resuming
// after the last seq read when one ends (an instance may be restarting).
func (s *sim) readLog(c *client.Client, page string, head int64) ([]client.Event, error) {
	var out []client.Event
	deadline := time.Now().Add(3 * s.opts.EchoTimeout)
	for attempt := 0; lastSeq(out) < head; attempt++ {
		if time.Now().After(deadline) || s.ctx.Err() != nil {
			return out, fmt.Errorf("log of %s ends at seq %d, head is %d", page, lastSeq(out), head)
		}
		if attempt > 0 {
			s.pause(attempt)
		}
		sub, err := c.Subscribe(s.ctx, page, lastSeq(out))
		if err != nil {
			continue
		}
		for lastSeq(out) < head {
			ctx, cancel := context.WithTimeout(s.ctx, s.opts.EchoTimeout)
			ev, err := sub.Next(ctx)
			cancel()
			if err != nil {
				break
			}
			if ev.Seq <= lastSeq(out) {
				s.find(CheckResume, "reading the log of %s: subscribed with lastEventId %d, got seq %d", shortID(page), lastSeq(out), ev.Seq)
				sub.Close()
				return out, fmt.Errorf("log of %s: the subscription replays seqs before its lastEventId", shortID(page))
			}
			out = append(out, ev)
		}
		sub.Close()
	}
	return out, nil
}

func lastSeq(evs []client.Event) int64 {
	if len(evs) == 0 {
		return 0
	}
	return evs[len(evs)-1].Seq
}

// Checker is one checker of the simulator: a row of Checks, run on every
// seed's end state after the findings made while the seed ran.
type Checker struct {
	Name    string
	Section string // what of spec/ it holds the server (and the clients) to
	Proves  string // one line, as docs/testing-clients.md's table says it
	run     func(s *sim, f *final) []string
	// Unit names what the checker's evidence counts ("rejections");
	// evidence counts it in a seed. A checker with no evidence and no
	// finding is skipped, never passed: it had nothing to check.
	Unit     string
	evidence func(s *sim, f *final) int
}

// final is what the checkers read at a seed's end: each page's snapshot,
// its whole log and the fold of it, and how often each id is in the logs.
type final struct {
	pages map[string]*pageState
	inLog map[string]int
	logAt map[string]map[int64]string // page -> seq -> id
	vis   string                      // the linearizability visualization, on failure
}

// Checks are the checkers in report order (the protocol checker first).
var Checks = []Checker{
	{CheckProtocol, "PROTOCOL.md 4, 6", "every answer was a decision or a retryable error; every owed echo arrived", (*sim).checkProtocol,
		"decisions", func(s *sim, _ *final) int { return s.stats.Committed + s.stats.Rejected }},
	{CheckConvergence, "window.md", "every window renders the fold of the server's log, nothing pending", (*sim).checkConvergence,
		"windows", func(s *sim, _ *final) int { return len(s.wins) + len(s.foreign) }},
	{CheckProjection, "PROTOCOL.md 4.2", "`kb.page` equals the fold of the log", (*sim).checkProjection,
		"pages", func(s *sim, f *final) int { return countPages(f, func(ps *pageState) bool { return ps.err == "" }) }},
	{CheckGapless, "PROTOCOL.md 4.1, 4.4", "each page's seqs run 1..n", (*sim).checkGapless,
		"events", func(s *sim, f *final) int { return len(f.inLog) }},
	{CheckExactlyOnce, "PROTOCOL.md 4.1", "each acknowledged id is in the log once, at the seq acknowledged; rejected ids never", (*sim).checkExactlyOnce,
		"retried ids", func(s *sim, _ *final) int { return s.countOps(func(o *op) bool { return o.posts > 1 }) }},
	{CheckRollback, "window.md", "rejected commands vanished from every window", (*sim).checkRollback,
		"rejections", func(s *sim, _ *final) int { return s.countOps(func(o *op) bool { return o.rejected != "" }) }},
	{CheckRefetch, "window.md", "every gap led to a refetch (and across a run, dropped echoes did exercise refetch)", (*sim).checkRefetch,
		"gaps", func(s *sim, _ *final) int { return s.stats.Gaps }},
	{CheckLinear, "README.md 6; PROTOCOL.md 4.1", "Porcupine finds a linearization of each page's history under the reducer (HTML visualization on failure)", (*sim).checkLinear,
		"operations", func(s *sim, _ *final) int { return s.countOps(func(o *op) bool { return o.ret != 0 }) }},
	{CheckResume, "PROTOCOL.md 4.4", "a subscription opened with lastEventId N delivers N+1, N+2, ... (nothing <= N, no hole)", noRun,
		"resubscribes", evidenceOf(CheckResume)},
	{CheckOutcomes, "PROTOCOL.md 4.2", "a refetch's outcomes list every pending id the server had decided, with that decision", noRun,
		"decided pending ids", evidenceOf(CheckOutcomes)},
	{CheckRecency, "PROTOCOL.md 4.2", "kb.page answers a snapshot at or past every seq of the page the server had revealed before the request", noRun,
		"page reads after a known seq", evidenceOf(CheckRecency)},
	{CheckDedup, "PROTOCOL.md 4.1", "a retry of a decided id gets the original decision (duplicate: true, the original seq)", noRun,
		"retries of decided ids", evidenceOf(CheckDedup)},
	{CheckLocalRejection, "ADAPTER.md 7; window.md", "a client window toasts an intent its reducer rejects, with its id, and never sends it", noRun,
		"local rejections", evidenceOf(CheckLocalRejection)},
	{CheckPending, "window.md; ADAPTER.md 7", "a client window's command leaves `pending` only after its echo, an answer or an outcome reached the client", noRun,
		"commands settled", evidenceOf(CheckPending)},
}

// clientOnly are the checkers of rules only a foreign client keeps
// (spec/ADAPTER.md 7): a seed without clients does not report them (they
// do not apply, rather than having nothing to check).
var clientOnly = map[string]bool{CheckLocalRejection: true, CheckPending: true}

// ClientRule reports whether the checker name holds a rule only a foreign
// client keeps, reported by seeds with clients alone.
func ClientRule(name string) bool { return clientOnly[name] }

// Checkers lists every checker's name in report order.
var Checkers = func() []string {
	out := make([]string, len(Checks))
	for i, c := range Checks {
		out[i] = c.Name
	}
	return out
}()

// noRun is the run of a checker whose findings are all made while the
// seed runs (checks_wire.go).
func noRun(*sim, *final) []string { return nil }

// evidenceOf is the evidence of a checker that counts what it checked
// while the seed ran (sim.exercise).
func evidenceOf(name string) func(*sim, *final) int {
	return func(s *sim, _ *final) int { return s.exercised[name] }
}

func (s *sim) countOps(keep func(*op) bool) int {
	n := 0
	for _, o := range s.ops {
		if keep(o) {
			n++
		}
	}
	return n
}

func countPages(f *final, keep func(*pageState) bool) int {
	n := 0
	for _, ps := range f.pages {
		if keep(ps) {
			n++
		}
	}
	return n
}

// verdictOf is a checker's verdict from its findings and its evidence: a
// finding fails it; no finding and no evidence skips it (why says what
// was missing); else it passed.
func verdictOf(ch Checker, problems []string, evidence int, why string) CheckResult {
	r := CheckResult{Name: ch.Name, Passed: len(problems) == 0, Evidence: evidence, Unit: ch.Unit}
	if len(problems) > 8 {
		problems = append(problems[:8], fmt.Sprintf("... and %d more", len(problems)-8))
	}
	r.Detail = strings.Join(problems, "\n")
	if r.Passed && evidence == 0 {
		r.Skipped, r.Detail = true, cmp.Or(why, noEvidence[ch.Name], "no "+ch.Unit+" to check")
	}
	return r
}

// noEvidence says what a seed lacked when a checker had nothing to check.
var noEvidence = map[string]string{
	CheckProtocol:    "no command was decided",
	CheckExactlyOnce: "no command was posted twice (no lost answer, no retry)",
	CheckRollback:    "the server rejected no command",
	CheckLinear:      "no command was decided",
	CheckResume:      "no subscription was opened after a seq",
	CheckOutcomes:    "no refetch had a pending id the server had decided",
	CheckDedup:       "no decided id was sent again",
	CheckRecency:     "no page was read after one of its seqs was known",
}

func (s *sim) check() ([]CheckResult, string) {
	c := s.kitClient()
	f := &final{pages: map[string]*pageState{}, inLog: map[string]int{}, logAt: map[string]map[int64]string{}}
	for _, id := range s.pages {
		ps := &pageState{id: id}
		f.pages[id] = ps
		snap, err := s.retryPage(c, id, nil)
		if err != nil {
			ps.err = fmt.Sprintf("kb.page %s: %v", id, err)
			continue
		}
		ps.snap = snap
		if ps.log, err = s.readLog(c, id, snap.Seq); err != nil {
			ps.err = err.Error()
		}
		ps.fold, _ = kbcore.NewDoc(kbcore.Page{ID: id}, nil)
		for _, ev := range ps.log {
			ps.fold = kbcore.Apply(ps.fold, ev.Cmd).Doc
		}
	}
	for _, id := range s.pages {
		f.logAt[id] = map[int64]string{}
		for _, ev := range f.pages[id].log {
			f.inLog[ev.Cmd.ID]++
			f.logAt[id][ev.Seq] = ev.Cmd.ID
		}
	}
	s.rec.final(f.pages)
	s.checkForeign(f.pages)
	var out []CheckResult
	for _, ch := range Checks {
		if clientOnly[ch.Name] && len(s.foreign) == 0 {
			continue
		}
		// The findings made while the seed ran come first: they happened
		// first, and the checks at the end often only see their effects.
		found := ch.run(s, f)
		problems := append(slices.Clone(s.found[ch.Name]), found...)
		out = append(out, verdictOf(ch, problems, ch.evidence(s, f), s.skipped[ch.Name]))
	}
	return out, f.vis
}

func (s *sim) checkProtocol(f *final) []string {
	protocol := slices.Clone(s.failures)
	for _, id := range s.pages {
		if ps := f.pages[id]; ps.err != "" {
			protocol = append(protocol, ps.err)
		}
	}
	return protocol
}

func (s *sim) checkConvergence(f *final) []string {
	var conv []string
	for _, w := range s.wins {
		ps := f.pages[s.pages[w.page]]
		if ps.err != "" {
			continue // reported by the protocol checker
		}
		if n := len(w.w.Pending()); n > 0 {
			conv = append(conv, fmt.Sprintf("window %d still has %d pending commands", w.idx, n))
		}
		if !w.w.Rendered().Equal(ps.fold) {
			conv = append(conv, fmt.Sprintf("window %d (page %s, seq %d) renders a document that differs from the fold of the server's log (seq %d):\n%s",
				w.idx, shortID(ps.id), w.w.Seq(), lastSeq(ps.log), docDiff(ps.fold, w.w.Rendered())))
		}
	}
	return conv
}

func (s *sim) checkProjection(f *final) []string {
	var proj []string
	for _, id := range s.pages {
		ps := f.pages[id]
		switch {
		case ps.err != "":
		case !ps.snap.Doc.Equal(ps.fold):
			proj = append(proj, fmt.Sprintf("kb.page %s (seq %d) differs from the fold of its log:\n%s", shortID(id), ps.snap.Seq, docDiff(ps.fold, ps.snap.Doc)))
		default:
			if d := canonicalDoc(ps.snap.RawDoc, ps.fold); d != "" {
				proj = append(proj, fmt.Sprintf("kb.page %s (seq %d): the doc's bytes are not the canonical encoding of the fold:%s", shortID(id), ps.snap.Seq, d))
			}
		}
	}
	return proj
}

func (s *sim) checkGapless(f *final) []string {
	var gapless []string
	for _, id := range s.pages {
		ps := f.pages[id]
		for i, ev := range ps.log {
			if ev.Seq != int64(i+1) {
				gapless = append(gapless, fmt.Sprintf("page %s: position %d holds seq %d", shortID(id), i+1, ev.Seq))
				break
			}
		}
		if ps.err == "" && lastSeq(ps.log) != ps.snap.Seq {
			gapless = append(gapless, fmt.Sprintf("page %s: log ends at %d but kb.page says seq %d", shortID(id), lastSeq(ps.log), ps.snap.Seq))
		}
	}
	return gapless
}

func (s *sim) checkExactlyOnce(f *final) []string {
	var once []string
	for id, n := range f.inLog {
		if n > 1 {
			once = append(once, fmt.Sprintf("command %s appears %d times in the logs", id, n))
		}
	}
	for _, o := range s.sortedOps() {
		if f.pages[o.page].err != "" {
			continue
		}
		switch {
		case o.ret != 0 && o.rejected == "" && f.logAt[o.page][o.seq] != o.id:
			once = append(once, fmt.Sprintf("command %s (%s) was acknowledged with seq %d, but the log holds %q there", o.id, o.cmd.Type, o.seq, f.logAt[o.page][o.seq]))
		case o.ret != 0 && o.rejected == "" && f.inLog[o.id] != 1:
			once = append(once, fmt.Sprintf("acknowledged command %s (%s, seq %d) appears %d times in the log", o.id, o.cmd.Type, o.seq, f.inLog[o.id]))
		case o.rejected != "" && f.inLog[o.id] > 0:
			once = append(once, fmt.Sprintf("rejected command %s (%s: %s) is in the log", o.id, o.cmd.Type, o.rejected))
		}
	}
	return append(once, s.provenance(f.pages)...)
}

func (s *sim) checkRollback(f *final) []string {
	var rollback []string
	for _, o := range s.sortedOps() {
		if o.rejected == "" {
			continue
		}
		for _, w := range s.wins {
			for _, p := range w.w.Pending() {
				if p.ID == o.id {
					rollback = append(rollback, fmt.Sprintf("window %d still holds rejected command %s", w.idx, o.id))
				}
			}
			// A node of a rejected create-after may come back through a
			// committed command (the restore-page that undoes a merge
			// carries every record the window showed, the rejected node
			// among them): then the fold of the log holds it too, and it
			// is the log's doing, not a rollback that failed.
			if o.cmd.Type == kbcore.TypeCreateAfter && s.pages[w.page] == o.page {
				_, inFold := f.pages[o.page].fold.Node(createdID(o.cmd))
				if _, ok := w.w.Rendered().Node(createdID(o.cmd)); ok && !inFold {
					rollback = append(rollback, fmt.Sprintf("window %d renders node %s of rejected command %s", w.idx, createdID(o.cmd), o.id))
				}
			}
		}
	}
	return rollback
}

func (s *sim) checkRefetch(*final) []string {
	var refetch []string
	if s.stats.Gaps == 0 {
		s.skip(CheckRefetch, "no gap was seen (no echo dropped before a later one)")
	}
	if s.stats.Dropped > 0 && s.stats.Refetches == 0 && s.stats.Gaps > 0 {
		refetch = append(refetch, fmt.Sprintf("%d gaps were seen but no window refetched", s.stats.Gaps))
	}
	if s.stats.Gaps > s.stats.Refetches {
		refetch = append(refetch, fmt.Sprintf("%d gaps but only %d refetches", s.stats.Gaps, s.stats.Refetches))
	}
	return refetch
}

func (s *sim) checkLinear(f *final) []string {
	lin, vis := s.linearizability(f.pages)
	f.vis = vis
	return lin
}

// skip marks checker as given nothing to check in this seed.
func (s *sim) skip(checker, why string) {
	if s.skipped == nil {
		s.skipped = map[string]string{}
	}
	s.skipped[checker] = why
}

// Skipped returns the checkers that every seed of a run skipped (and none
// failed): the run proved nothing about what they guard.
func Skipped(reports []SeedReport) []string {
	var out []string
	for _, name := range Checkers {
		ran, skipped := 0, 0
		for _, r := range reports {
			for _, c := range r.Checks {
				if c.Name != name {
					continue
				}
				ran++
				if c.Skipped && c.Passed {
					skipped++
				}
			}
		}
		if ran > 0 && skipped == ran {
			out = append(out, name)
		}
	}
	return out
}

// provenance checks that every command in a page's log is one the clients
// sent, or a derived command of one of them (its id is DerivedID(origin,
// page, n)), and that kb.page reports every logged id committed at the seq
// where the log holds it.
func (s *sim) provenance(pages map[string]*pageState) []string {
	var problems []string
	known := map[string]bool{}
	for _, id := range s.setupIDs {
		known[id] = true
	}
	var origins []string
	for _, o := range s.ops {
		known[o.id] = true
		if o.ret != 0 && o.rejected == "" {
			origins = append(origins, o.id)
		}
	}
	origins = append(origins, s.setupIDs...)
	for _, page := range s.pages {
		for _, origin := range origins {
			for n := 0; n < 64; n++ {
				known[kbcore.DerivedID(origin, page, n)] = true
			}
		}
	}
	c := s.kitClient()
	for _, page := range s.pages {
		ps := pages[page]
		if ps.err != "" {
			continue
		}
		var ids []string
		at := map[string]int64{}
		for _, ev := range ps.log {
			if !known[ev.Cmd.ID] {
				problems = append(problems, fmt.Sprintf("page %s seq %d holds %s (%s), which no client sent and no sent command derives", shortID(page), ev.Seq, ev.Cmd.ID, ev.Cmd.Type))
			}
			ids = append(ids, ev.Cmd.ID)
			at[ev.Cmd.ID] = ev.Seq
		}
		for len(ids) > 0 {
			chunk := ids[:min(len(ids), 500)]
			ids = ids[len(chunk):]
			snap, err := s.retryPage(c, page, chunk)
			if err != nil {
				problems = append(problems, fmt.Sprintf("kb.page %s outcomes: %v", shortID(page), err))
				break
			}
			for _, id := range chunk {
				if o := snap.Outcomes[id]; o.Rejected != nil || o.Seq != at[id] {
					problems = append(problems, fmt.Sprintf("page %s: the log holds %s at seq %d but kb.page reports %+v", shortID(page), id, at[id], o))
				}
			}
		}
	}
	return problems
}

func createdID(c kbcore.Command) string {
	var p kbcore.CreateAfter
	if err := jsonUnmarshal(c.Payload, &p); err == nil && p.Node != nil {
		return *p.Node
	}
	return c.ID
}

func docDiff(want, got kbcore.Doc) string {
	a, _ := want.MarshalJSON()
	b, _ := got.MarshalJSON()
	return fmt.Sprintf("  fold: %.600s\n  got:  %.600s", a, b)
}

// ---- linearizability ----

type linInput struct {
	cmd  kbcore.Command
	from string // "client" or "log"
}

type linOutput struct {
	seq      int64
	rejected string
}

type linState struct {
	doc kbcore.Doc
	seq int64
}

var plannerCodes = map[string]bool{kbcore.CodeTitleTaken: true, kbcore.CodeAliasTaken: true,
	kbcore.CodePageNotFound: true, "protocol-error": true}

// derivedOnOtherPage are the types whose derived commands on another page
// the reducer may reject, which rejects the whole plan (spec/planner.md
// 1): a merge-page whose restore on the target finds a node id taken
// (node-exists; a page merged, restored and merged again), a
// restore-page's deletes on the target. The page's own reducer accepts
// such a command; its rejection is the other page's doing.
var derivedOnOtherPage = map[string]bool{kbcore.TypeMergePage: true, kbcore.TypeRestorePage: true}

func pageModel(page string) porcupine.Model {
	return porcupine.Model{
		Init: func() interface{} {
			d, _ := kbcore.NewDoc(kbcore.Page{ID: page}, nil)
			return linState{doc: d}
		},
		Step: func(state, input, output interface{}) (bool, interface{}) {
			st := state.(linState)
			in := input.(linInput)
			out := output.(linOutput)
			res := kbcore.Apply(st.doc, in.cmd)
			if out.rejected != "" {
				if plannerCodes[out.rejected] {
					return true, st // decided by the planner, not the page reducer
				}
				if res.Rejected == nil && derivedOnOtherPage[in.cmd.Type] {
					return true, st // rejected for a derived command on another page
				}
				return res.Rejected != nil && res.Rejected.Code == out.rejected, st
			}
			if res.Rejected != nil || out.seq != st.seq+1 {
				return false, st
			}
			return true, linState{doc: res.Doc, seq: out.seq}
		},
		Equal: func(a, b interface{}) bool {
			x, y := a.(linState), b.(linState)
			return x.seq == y.seq && x.doc.Equal(y.doc)
		},
		Hash: func(s interface{}) uint64 { return uint64(s.(linState).seq) },
		DescribeOperation: func(input, output interface{}) string {
			in, out := input.(linInput), output.(linOutput)
			res := fmt.Sprintf("seq %d", out.seq)
			if out.rejected != "" {
				res = "rejected " + out.rejected
			}
			return fmt.Sprintf("%s %s %.80s -> %s", in.cmd.Type, shortID(in.cmd.ID), in.cmd.Payload, res)
		},
		DescribeState: func(s interface{}) string {
			st := s.(linState)
			b, _ := st.doc.MarshalJSON()
			return fmt.Sprintf("seq %d: %.400s", st.seq, b)
		},
	}
}

// linearizability checks each page's history with Porcupine: the clients'
// commands with their call and decision times, and the log's other commands
// (derived, setup) anywhere in the run; the model is the page reducer.
func (s *sim) linearizability(pages map[string]*pageState) ([]string, string) {
	var problems []string
	vis := ""
	end := time.Since(s.start).Nanoseconds() + 1
	for _, id := range s.pages {
		ps := pages[id]
		if ps.err != "" {
			continue
		}
		var hist []porcupine.Operation
		client := map[string]bool{}
		for _, o := range s.sortedOps() {
			if o.page != id || o.ret == 0 || o.refusedAt > 0 {
				continue // a refused command never reached the server
			}
			client[o.id] = true
			hist = append(hist, porcupine.Operation{ClientId: o.win, Input: linInput{cmd: o.cmd, from: "client"},
				Call: o.call, Output: linOutput{seq: o.seq, rejected: o.rejected}, Return: o.ret})
		}
		for _, ev := range ps.log {
			if client[ev.Cmd.ID] {
				continue
			}
			hist = append(hist, porcupine.Operation{ClientId: len(s.wins), Input: linInput{cmd: ev.Cmd, from: "log"},
				Call: 0, Output: linOutput{seq: ev.Seq}, Return: end})
		}
		model := pageModel(id)
		res, info := porcupine.CheckOperationsVerbose(model, hist, 20*time.Second)
		switch res {
		case porcupine.Ok:
		case porcupine.Unknown:
			problems = append(problems, fmt.Sprintf("page %s: the check timed out (%d operations)", shortID(id), len(hist)))
		default:
			p := fmt.Sprintf("page %s: no linearization of %d operations is consistent with the reducer", shortID(id), len(hist))
			if s.opts.OutDir != "" {
				path := filepath.Join(s.opts.OutDir, fmt.Sprintf("seed-%d-page-%s.html", s.seed, shortID(id)))
				if f, err := os.Create(path); err == nil {
					if porcupine.Visualize(model, info, f) == nil {
						vis = path
						p += " (visualization: " + path + ")"
					}
					f.Close()
				}
			}
			problems = append(problems, p)
		}
	}
	return problems, vis
}
