package sim

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/sim/timeline"
)

// recorder fills a seed's timeline (package timeline) from hooks in the
// simulator. A nil recorder records nothing: the hooks cost nothing when
// no timeline is asked for (Options.HTMLDir empty).
type recorder struct {
	s     *sim
	t     *timeline.Timeline
	cmd   map[string]int // command id -> its command span
	issue map[string]int // command id -> its issue mark
}

func (s *sim) now() int64 { return time.Since(s.start).Nanoseconds() }

// startRecording opens the timeline once the windows are open.
func (s *sim) startRecording() {
	if s.opts.HTMLDir == "" {
		return
	}
	r := &recorder{s: s, t: &timeline.Timeline{Seed: s.seed}, cmd: map[string]int{}, issue: map[string]int{}}
	eps := s.target.Endpoints()
	for _, w := range s.wins {
		lane := r.t.AddLane(timeline.Lane{ID: fmt.Sprintf("w%d", w.idx), Kind: timeline.LaneWindow,
			Label:  fmt.Sprintf("P%d · device %d · inst %d", w.page, w.dev, w.idx%len(eps)),
			Detail: fmt.Sprintf("window %d on page P%d (%s), device %d, instance %d", w.idx, w.page, s.pages[w.page], w.dev, w.idx%len(eps))})
		r.t.Add(timeline.Event{Lane: lane, Kind: timeline.KindOpen, At: s.now(), Window: w.idx, Page: s.pages[w.page], Seq: w.w.Seq(),
			Label: fmt.Sprintf("open at seq %d", w.w.Seq()), State: r.state(w)})
	}
	for i, ep := range eps {
		r.t.AddLane(timeline.Lane{ID: fmt.Sprintf("i%d", i), Kind: timeline.LaneInstance, Label: "instance " + fmt.Sprint(i), Detail: ep})
	}
	s.rec = r
}

func (r *recorder) state(w *win) string {
	var b strings.Builder
	fmt.Fprintf(&b, "seq %d · %d pending", w.w.Seq(), len(w.w.Pending()))
	for i, c := range w.w.Pending() {
		if i == 6 {
			b.WriteString(" …")
			break
		}
		fmt.Fprintf(&b, " %s %s", shortID(c.ID), c.Type)
	}
	if w.w.Awaiting() {
		b.WriteString(" · awaiting a snapshot")
	}
	return b.String()
}

func winLane(w *win) string { return fmt.Sprintf("w%d", w.idx) }

func (r *recorder) links(ids []string, from map[string]int) []int {
	var out []int
	for _, id := range ids {
		if e, ok := from[id]; ok {
			out = append(out, e)
		}
	}
	return out
}

// action records what the window asked for: a command issued (pending
// from now; an undo's or redo's linked to the commands it reverts) or a
// toast.
func (r *recorder) action(w *win, a kbcore.Action) {
	if r == nil {
		return
	}
	switch a.Kind {
	case kbcore.ActionSend:
		if _, ok := r.issue[a.ID]; ok {
			return
		}
		var c kbcore.Command
		for _, p := range w.w.Pending() {
			if p.ID == a.ID {
				c = p
			}
		}
		reverts := w.w.Reverts(a.ID)
		label := fmt.Sprintf("%s %.60s", c.Type, c.Payload)
		if len(reverts) > 0 {
			label = "↶ " + label
		}
		r.issue[a.ID] = r.t.Add(timeline.Event{Lane: winLane(w), Kind: timeline.KindIssue, At: r.s.now(), Window: w.idx,
			Page: r.s.pages[w.page], Cmd: a.ID, Label: label, Envelope: string(mustJSON(c)), State: r.state(w),
			Links: r.links(reverts, r.issue)})
	case kbcore.ActionToast:
		r.t.Add(timeline.Event{Lane: winLane(w), Kind: timeline.KindToast, At: r.s.now(), Window: w.idx,
			Page: r.s.pages[w.page], Label: "toast " + a.Code, Status: a.Code, State: r.state(w)})
	}
}

// undo records an undo or redo and the commands it reverts.
func (r *recorder) undo(w *win, kind string, acts []kbcore.Action) {
	if r == nil {
		return
	}
	var reverts []string
	for _, a := range acts {
		if a.Kind == kbcore.ActionSend {
			reverts = append(reverts, w.w.Reverts(a.ID)...)
		}
	}
	label := kind
	if len(reverts) == 0 {
		label += " (nothing)"
	}
	r.t.Add(timeline.Event{Lane: winLane(w), Kind: kind, At: r.s.now(), Window: w.idx, Page: r.s.pages[w.page],
		Label: label, State: r.state(w), Links: r.links(reverts, r.issue)})
}

// command opens a command's span at its first POST.
func (r *recorder) command(w *win, o *op) {
	if r == nil {
		return
	}
	links := []int{}
	if e, ok := r.issue[o.id]; ok {
		links = append(links, e)
	}
	r.cmd[o.id] = r.t.Add(timeline.Event{Lane: winLane(w), Kind: timeline.KindCommand, At: o.call, Open: true, Window: w.idx,
		Page: o.page, Cmd: o.id, Label: fmt.Sprintf("%s %s", o.cmd.Type, shortID(o.id)), Links: links})
}

// post records one POST of kb.command on its instance's lane.
func (r *recorder) post(sc *sendCall) {
	if r == nil {
		return
	}
	env, _ := json.Marshal(sc.env)
	e := timeline.Event{Lane: fmt.Sprintf("i%d", sc.w.idx%len(r.s.target.Endpoints())), Kind: timeline.KindPost, At: sc.t0, End: r.s.now(),
		Window: sc.w.idx, Page: sc.env.PageID, Cmd: sc.c.ID, Envelope: string(env), State: r.state(sc.w)}
	switch {
	case sc.err != nil:
		e.Status = "error: " + sc.err.Error()
		e.Answer = sc.err.Error()
	case sc.rej != nil:
		e.Status = "rejected " + sc.rej.Code
		b, _ := json.Marshal(sc.rej)
		e.Answer = string(b)
	default:
		e.Status, e.Seq = fmt.Sprintf("seq %d", sc.ack.Seq), sc.ack.Seq
		if sc.ack.Duplicate {
			e.Status += " (duplicate)"
		}
		b, _ := json.Marshal(sc.ack)
		e.Answer = string(b)
	}
	if sc.lose && sc.err == nil {
		e.Status += ", answer lost (fault)"
		e.Fault = true
	}
	e.Label = fmt.Sprintf("w%d POST %s %s → %s", sc.w.idx, sc.c.Type, shortID(sc.c.ID), e.Status)
	if c, ok := r.cmd[sc.c.ID]; ok {
		e.Links = []int{c}
	}
	r.t.Add(e)
}

// decided closes a command's span at the server's verdict.
func (r *recorder) decided(id string, seq int64, rej *kbcore.Rejection) {
	if r == nil {
		return
	}
	c, ok := r.cmd[id]
	if !ok {
		return
	}
	e := r.t.Event(c)
	e.End, e.Open = r.s.now(), false
	if rej != nil {
		e.Status = "rejected " + rej.Code
	} else {
		e.Status, e.Seq = fmt.Sprintf("seq %d", seq), seq
	}
	e.Label += " → " + e.Status
}

// echo records an event of w's subscription applied to the window.
func (r *recorder) echo(w *win, ev client.Event, before int64, acts []kbcore.Action) {
	if r == nil {
		return
	}
	b, _ := json.Marshal(ev.Cmd)
	e := timeline.Event{Lane: winLane(w), Kind: timeline.KindEcho, At: r.s.now(), Window: w.idx, Page: r.s.pages[w.page],
		Cmd: ev.Cmd.ID, Seq: ev.Seq, Envelope: string(b), State: r.state(w),
		Label: fmt.Sprintf("echo %d %s %s (%d→%d)", ev.Seq, ev.Cmd.Type, shortID(ev.Cmd.ID), before, w.w.Seq())}
	if len(acts) > 0 {
		e.Status = fmt.Sprint(acts)
	}
	if c, ok := r.cmd[ev.Cmd.ID]; ok {
		e.Links = []int{c}
	}
	r.t.Add(e)
}

// refetch records a kb.page with pending ids, from the request to the
// snapshot, linked to the commands whose outcomes it reported.
func (r *recorder) refetch(w *win, t0 int64, ids []string, snap client.Snapshot, err error) {
	if r == nil {
		return
	}
	e := timeline.Event{Lane: winLane(w), Kind: timeline.KindRefetch, At: t0, End: r.s.now(), Window: w.idx, Page: r.s.pages[w.page]}
	req, _ := json.Marshal(map[string]any{"pageId": r.s.pages[w.page], "pending": ids})
	e.Envelope = string(req)
	if err != nil {
		e.Status, e.Label = "error: "+err.Error(), "refetch failed"
		r.t.Add(e)
		return
	}
	out, _ := json.Marshal(map[string]any{"seq": snap.Seq, "outcomes": snap.Outcomes})
	e.Answer, e.Seq = string(out), snap.Seq
	e.Label = fmt.Sprintf("refetch → seq %d, %d outcomes", snap.Seq, len(snap.Outcomes))
	e.Status = fmt.Sprintf("snapshot at seq %d", snap.Seq)
	for id := range snap.Outcomes {
		if c, ok := r.cmd[id]; ok {
			e.Links = append(e.Links, c)
		}
	}
	e.State = r.state(w)
	r.t.Add(e)
}

// fault marks an injected fault on a lane ("" = the database's).
func (r *recorder) fault(w *win, format string, args ...any) {
	if r == nil {
		return
	}
	e := timeline.Event{Lane: "db", Kind: timeline.KindFault, At: r.s.now(), Window: -1, Fault: true, Label: fmt.Sprintf(format, args...)}
	if w != nil {
		e.Lane, e.Window, e.Page, e.State = winLane(w), w.idx, r.s.pages[w.page], r.state(w)
	} else if !r.t.HasLane("db") {
		r.t.AddLane(timeline.Lane{ID: "db", Kind: timeline.LaneDatabase, Label: "Postgres"})
	}
	r.t.Add(e)
}

// restart marks an instance killed and restarted.
func (r *recorder) restart(i int) {
	if r == nil {
		return
	}
	r.t.Add(timeline.Event{Lane: fmt.Sprintf("i%d", i), Kind: timeline.KindFault, At: r.s.now(), Window: -1, Fault: true,
		Label: fmt.Sprintf("instance %d killed and restarted (fault)", i)})
}

// note marks something worth seeing on a window's lane.
func (r *recorder) note(w *win, text string) {
	if r == nil {
		return
	}
	r.t.Add(timeline.Event{Lane: winLane(w), Kind: timeline.KindNote, At: r.s.now(), Window: w.idx, Page: r.s.pages[w.page],
		Label: text, State: r.state(w)})
}

// final records each page's log (an entry at its command's decision, or
// at its first echo) and the final documents beside the fold of the log.
func (r *recorder) final(pages map[string]*pageState) {
	if r == nil {
		return
	}
	firstEcho := map[string]int64{}
	for _, e := range r.t.Events {
		if e.Kind == timeline.KindEcho {
			k := fmt.Sprintf("%s/%d", e.Page, e.Seq)
			if t, ok := firstEcho[k]; !ok || e.At < t {
				firstEcho[k] = e.At
			}
		}
	}
	end := r.s.now()
	setup := map[string]bool{}
	for _, id := range r.s.setupIDs {
		setup[id] = true
	}
	for k, id := range r.s.pages {
		ps := pages[id]
		lane := r.t.AddLane(timeline.Lane{ID: fmt.Sprintf("log P%d", k), Kind: timeline.LaneLog, Label: "page log " + shortID(id), Detail: id})
		for _, ev := range ps.log {
			at, ok := firstEcho[fmt.Sprintf("%s/%d", id, ev.Seq)]
			if o := r.s.ops[ev.Cmd.ID]; o != nil && o.ret != 0 && (!ok || o.ret < at) {
				at, ok = o.ret, true
			}
			if !ok && !setup[ev.Cmd.ID] {
				at = end // never echoed to a window: drawn at the end
			}
			b, _ := json.Marshal(ev.Cmd)
			e := timeline.Event{Lane: lane, Kind: timeline.KindLog, At: at, Window: -1, Page: id, Cmd: ev.Cmd.ID, Seq: ev.Seq,
				Envelope: string(b), Label: fmt.Sprintf("%d %s %s", ev.Seq, ev.Cmd.Type, shortID(ev.Cmd.ID))}
			if c, ok := r.cmd[ev.Cmd.ID]; ok {
				e.Links = []int{c}
			}
			r.t.Add(e)
		}
		d := timeline.PageDocs{Page: id, Label: fmt.Sprintf("page P%d (%s, seq %d)", k, shortID(id), lastSeq(ps.log))}
		if ps.err != "" {
			d.Label += ": " + ps.err
		}
		d.Log = timeline.DocView{Label: "fold of the log", Lines: timeline.Outline(ps.fold)}
		for _, w := range r.s.wins {
			if w.page != k {
				continue
			}
			lines := timeline.Outline(w.w.Rendered())
			v := timeline.DocView{Label: fmt.Sprintf("w%d at seq %d, %d pending", w.idx, w.w.Seq(), len(w.w.Pending())), Lines: lines}
			if diff := timeline.Diff(d.Log.Lines, lines); timeline.Differs(diff) {
				v.Diff = diff
			}
			d.Windows = append(d.Windows, v)
		}
		d.Windows = append(d.Windows, r.foreignDocs(k, d.Log.Lines)...)
		r.t.Docs = append(r.t.Docs, d)
	}
}

// writeTimeline writes the seed's page into Options.HTMLDir when the seed
// failed (or could not run), or always with Options.HTMLAll, and names it
// in the report.
func (s *sim) writeTimeline(rep *SeedReport) {
	r := s.rec
	if r == nil || !(rep.Failed() || rep.Err != "" || s.opts.HTMLAll) {
		return
	}
	t := r.t
	t.EndAt = s.now()
	t.Failed = rep.Failed()
	t.Faults = rep.Faults
	t.Title = fmt.Sprintf("kbkit conformance: seed %d %s", s.seed, map[bool]string{true: "FAILED", false: "passed"}[t.Failed])
	if rep.Err != "" {
		t.Title = fmt.Sprintf("kbkit conformance: seed %d could not run", s.seed)
	}
	if s.opts.Choices != nil {
		t.Title += fmt.Sprintf(" (replayed from %d choices)", len(s.opts.Choices))
	}
	st := rep.Stats
	t.Summary = fmt.Sprintf("%d windows, %d pages, %d devices, %d steps in %s: %d commands (%d committed, %d rejected), %d refetches, %d dropped / %d duplicated / %d reordered echoes, %d socket cuts, %d lost answers, %d restarts",
		len(s.wins), len(s.pages), len(s.devices), s.opts.Steps, time.Since(s.start).Round(time.Millisecond), st.Commands, st.Committed, st.Rejected,
		st.Refetches, st.Dropped, st.Duplicated, st.Reordered, st.Cuts, st.LostResp, st.Restarts)
	if rep.Err != "" {
		t.Summary += ". Error: " + rep.Err
	}
	t.Replay = ReplayCommand(s.opts, s.seed)
	for _, c := range rep.Checks {
		t.Checks = append(t.Checks, timeline.Check{Name: c.Name, Passed: c.Passed, Skipped: c.Skipped, Detail: c.Detail})
		if c.Passed {
			continue
		}
		for _, f := range timeline.SplitFindings(c.Detail) {
			t.AddFinding(c.Name, f)
		}
	}
	name := fmt.Sprintf("seed-%d.html", s.seed)
	if s.opts.Choices != nil {
		name = fmt.Sprintf("seed-%d-choices.html", s.seed) // a replayed (e.g. shrunk) history beside the seed's own
	}
	path := filepath.Join(s.opts.HTMLDir, name)
	f, err := os.Create(path)
	if err != nil {
		s.opts.Logf("seed %d: timeline: %v", s.seed, err)
		return
	}
	if err := timeline.HTML(f, t); err != nil {
		f.Close()
		s.opts.Logf("seed %d: timeline: %v", s.seed, err)
		return
	}
	if err := f.Close(); err != nil {
		s.opts.Logf("seed %d: timeline: %v", s.seed, err)
		return
	}
	rep.Timeline = path
}
