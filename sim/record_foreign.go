package sim

import (
	"fmt"

	"github.com/subspace/kbkit/sim/timeline"
	"github.com/subspace/kbkit/speckit/adapter"
)

// The timeline of a foreign window (foreign.go): a lane like a reference
// window's, with the intents its user made, the commands and events its
// proxy saw and the faults injected into its sockets.

func foreignLaneID(fw *foreignWin) string { return fmt.Sprintf("w%d", fw.idx) }

func (r *recorder) foreignState(fw *foreignWin) string {
	return fmt.Sprintf("seq %d · %d pending (as the client reported)", fw.state.Seq, len(fw.state.Pending))
}

func (r *recorder) foreignLane(fw *foreignWin) {
	if r == nil {
		return
	}
	lane := r.t.AddLane(timeline.Lane{ID: foreignLaneID(fw), Kind: timeline.LaneWindow,
		Label:  fmt.Sprintf("P%d · client · device %d", fw.page, fw.dev),
		Detail: fmt.Sprintf("window %d of client %q on page P%d (%s), device %d, through its fault proxy %s", fw.idx, fw.line, fw.page, r.s.pages[fw.page], fw.dev, fw.proxy.URL())})
	r.t.Add(timeline.Event{Lane: lane, Kind: timeline.KindOpen, At: r.s.now(), Window: fw.idx, Page: r.s.pages[fw.page], Seq: fw.state.Seq,
		Label: fmt.Sprintf("client opened at seq %d", fw.state.Seq), State: r.foreignState(fw)})
}

func (r *recorder) foreignIntent(fw *foreignWin, req adapter.IntentRequest) {
	if r == nil {
		return
	}
	e := timeline.Event{Lane: foreignLaneID(fw), Kind: timeline.KindIssue, At: r.s.now(), Window: fw.idx, Page: r.s.pages[fw.page],
		Cmd: req.ID, Label: fmt.Sprintf("%s %.60s", req.Intent, req.Payload), Envelope: string(mustJSON(req)), State: r.foreignState(fw)}
	if req.Intent == "undo" || req.Intent == "redo" {
		e.Kind, e.Label = req.Intent, req.Intent
	}
	id := r.t.Add(e)
	if req.ID != "" {
		r.issue[req.ID] = id
	}
}

func (r *recorder) foreignPost(fw *foreignWin, rec proxyRec) {
	if r == nil {
		return
	}
	o := r.s.ops[rec.id]
	if o == nil {
		return
	}
	links := []int{}
	if e, ok := r.issue[o.id]; ok {
		links = append(links, e)
	}
	r.cmd[o.id] = r.t.Add(timeline.Event{Lane: foreignLaneID(fw), Kind: timeline.KindCommand, At: o.call, Open: true, Window: fw.idx,
		Page: o.page, Cmd: o.id, Label: fmt.Sprintf("%s %s", o.cmd.Type, shortID(o.id)), Envelope: string(mustJSON(rec.env)), Links: links})
}

func (r *recorder) foreignEcho(fw *foreignWin, rec proxyRec) {
	if r == nil {
		return
	}
	e := timeline.Event{Lane: foreignLaneID(fw), Kind: timeline.KindEcho, At: rec.at, Window: fw.idx, Page: r.s.pages[fw.page],
		Cmd: rec.cmdID, Seq: rec.seq, Label: fmt.Sprintf("event %d %s delivered", rec.seq, shortID(rec.cmdID))}
	if c, ok := r.cmd[rec.cmdID]; ok {
		e.Links = []int{c}
	}
	r.t.Add(e)
}

func (r *recorder) foreignFault(fw *foreignWin, text string) {
	if r == nil {
		return
	}
	r.t.Add(timeline.Event{Lane: foreignLaneID(fw), Kind: timeline.KindFault, At: r.s.now(), Window: fw.idx, Page: r.s.pages[fw.page],
		Fault: true, Label: text, State: r.foreignState(fw)})
}

// foreignDocs are the final documents of the foreign windows on page k,
// beside the fold of the log (its outline: log).
func (r *recorder) foreignDocs(k int, log []string) []timeline.DocView {
	var out []timeline.DocView
	for _, fw := range r.s.foreign {
		if fw.page != k {
			continue
		}
		lines := timeline.Outline(fw.doc)
		v := timeline.DocView{Label: fmt.Sprintf("w%d (%s) at seq %d, %d pending", fw.idx, fw.line, fw.state.Seq, len(fw.state.Pending)), Lines: lines}
		if diff := timeline.Diff(log, lines); timeline.Differs(diff) {
			v.Diff = diff
		}
		out = append(out, v)
	}
	return out
}
