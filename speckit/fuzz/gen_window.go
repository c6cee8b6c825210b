package fuzz

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/speckit/cases"
)

// genWindowCase draws a window script. It runs the reference Window as it
// draws, so that echoes, acks, rejections, snapshots and undos refer to
// the window's actual pending ids and seq most of the time.
func genWindowCase(s *Source) (cases.Case, error) {
	nodes, info := genNodes(s, 75, 4, genNodeText)
	givenDoc := map[string]any{"nodes": nodes}
	seq := int64(s.Intn(4))
	b, err := cases.ExpandDoc(givenDoc, cases.DefaultPage)
	if err != nil {
		return cases.Case{}, err
	}
	doc, err := kbcore.ParseDoc(b)
	if err != nil {
		return cases.Case{}, err
	}
	g := &windowGen{s: s, w: kbcore.NewWindow(doc, seq), info: info, page: pageMap(doc), last: -1}
	steps := []any{}
	s.List(85, 10, func(int) {
		if ev := g.step(); ev != nil {
			steps = append(steps, map[string]any{"event": ev})
		}
	})
	given := map[string]any{"doc": givenDoc}
	if seq != 0 {
		given["seq"] = float64(seq)
	}
	return cases.Case{Given: given, Steps: steps}, nil
}

// windowGen draws the steps of one window script.
type windowGen struct {
	s                     *Source
	w                     *kbcore.Window
	info                  docInfo
	page                  map[string]any
	local, foreign, undos int // ids minted so far
	last                  int // the previous step's kind, -1 before the first
	sent                  bool
	issued                []string // the ids the latest local, undo or redo step used
}

// The kinds of window event, in spec/window.md's order.
const (
	evLocal = iota
	evEcho
	evAck
	evReject
	evSnapshot
	evUndo
	evRedo
)

var windowEventNames = []string{"local", "echo", "ack", "reject", "snapshot", "undo", "redo"}

// stepWeights weighs the next event: the kinds the spec's cases exercise
// least weigh most, and the previous step makes its usual sequel likelier
// (an accepted local edit an undo, an undo a redo or a rejection, a redo a
// rejection or a snapshot), so that scripts build undo and redo chains
// interleaved with the server's verdicts.
func (g *windowGen) stepWeights(pending int) []int {
	w := inverseWeights(windowEventNames, specCoverage().events)
	// Local commands build the state every other event acts on: the cases
	// send them most because every script needs them, and so does this.
	w[evLocal] = 4
	boost := func(k, by int) { w[k] *= by }
	if pending == 0 {
		boost(evLocal, 2)
	}
	switch {
	case g.last == evLocal && g.sent:
		boost(evUndo, 6)
	case g.last == evUndo && g.sent:
		boost(evRedo, 6)
		boost(evReject, 2)
	case g.last == evRedo && g.sent:
		boost(evReject, 6)
		boost(evSnapshot, 2)
		boost(evUndo, 2)
	case g.last == evReject || g.last == evSnapshot:
		boost(evUndo, 2)
		boost(evRedo, 2)
	}
	return w
}

// step draws one event, delivers it to the window and returns it; nil
// when the drawn command cannot be read (the step is left out).
func (g *windowGen) step() map[string]any {
	s, w := g.s, g.w
	pending := w.Pending()
	k := weightedIndex(s, g.stepWeights(len(pending)))
	g.last, g.sent = k, false
	before := len(pending)
	switch k {
	case evLocal:
		g.local++
		id := fmt.Sprintf("c%d", g.local)
		if dup := s.Chance(5); dup && len(pending) > 0 {
			id = pending[0].ID
		}
		gen := cmdGen{types: windowTypes, doc: nodeInfo(w.Rendered(), g.info), text: genNodeText}
		cmd := gen.drawType(s, id, pickWeighted(s, windowTypes, windowTypeWeights()))
		c, ok := asCommand(cmd)
		if !ok {
			return nil
		}
		acts := w.Local(c)
		g.sent = len(acts) > 0 && acts[len(acts)-1].Kind == kbcore.ActionSend
		g.issued = []string{id}
		return map[string]any{"local": cmd}
	case evEcho:
		return g.echo(pending)
	case evAck:
		return g.ack(pending)
	case evReject:
		id := g.pickPending(pending)
		code := Pick(s, []string{kbcore.CodeNodeNotFound, kbcore.CodeInvalidPayload, "id-reused"})
		w.Reject(id, code)
		return map[string]any{"reject": map[string]any{"id": id, "code": code}}
	case evSnapshot:
		snap, at, outcomes := genSnapshot(s, w)
		oc := map[string]kbcore.Outcome{}
		ob, _ := json.Marshal(outcomes)
		_ = json.Unmarshal(ob, &oc)
		w.Snapshot(snap, at, oc)
		return map[string]any{"snapshot": map[string]any{"doc": plainDoc(snap, g.page), "seq": float64(at), "outcomes": outcomes}}
	default:
		ev := g.undoRedo(k == evRedo, pending)
		g.sent = len(w.Pending()) > before
		return ev
	}
}

// windowTypeWeights weighs the local commands as typeWeights, restore
// thrice over: its undo entry is the one of several commands.
func windowTypeWeights() []int {
	w := typeWeights(windowTypes)
	w[slices.Index(windowTypes, kbcore.TypeRestore)] *= 3
	return w
}

// pickPending is a pending id: any, one the latest local, undo or redo
// step issued (the first command of a redo, say), one that such an undo
// or redo command reverts (the restore an undo undoes), or one that is
// not pending.
func (g *windowGen) pickPending(pending []kbcore.Command) string {
	s := g.s
	isPending := func(id string) bool {
		return slices.ContainsFunc(pending, func(c kbcore.Command) bool { return c.ID == id })
	}
	var recent, reverted []string
	for _, id := range g.issued {
		if isPending(id) {
			recent = append(recent, id)
		}
		for _, r := range g.w.Reverts(id) {
			if isPending(r) && !slices.Contains(reverted, r) {
				reverted = append(reverted, r)
			}
		}
	}
	switch k := s.Intn(10); {
	case k == 9 || len(pending) == 0:
		return "zz"
	case k >= 6 && len(reverted) > 0:
		return Pick(s, reverted)
	case k >= 3 && len(recent) > 0:
		return Pick(s, recent)
	}
	return pending[s.Intn(len(pending))].ID
}

// ack answers a pending command's post with a seq at, below or above the
// window's.
func (g *windowGen) ack(pending []kbcore.Command) map[string]any {
	s, w := g.s, g.w
	id := g.pickPending(pending)
	at := max(w.Seq()+int64(Pick(s, []int{0, -1, 1, 2})), 0)
	if s.Chance(10) {
		at = 0
	}
	w.Ack(id, at)
	return map[string]any{"ack": map[string]any{"id": id, "seq": float64(at)}}
}

// echo delivers a pending command (or another window's) at the next seq,
// or a duplicate, or one past a gap.
func (g *windowGen) echo(pending []kbcore.Command) map[string]any {
	s, w := g.s, g.w
	var c kbcore.Command
	var cmd map[string]any
	if other := s.Chance(25); len(pending) > 0 && !other {
		c = pending[s.Intn(min(2, len(pending)))]
		cmd = commandMap(c)
	} else {
		g.foreign++
		cmd = cmdGen{types: windowTypes, doc: nodeInfo(w.Server(), g.info), text: genNodeText}.draw(s, fmt.Sprintf("x%d", g.foreign))
		var ok bool
		if c, ok = asCommand(cmd); !ok {
			return nil
		}
	}
	at := max(w.Seq()+1+int64(Pick(s, []int{0, 0, 1, 2, -1, -2})), 0)
	w.Echo(at, c)
	return map[string]any{"echo": map[string]any{"seq": float64(at), "cmd": cmd}}
}

// undoRedo asks for an undo (or redo). Mostly its ids fit the entry it
// reverts: one, then one more while the window answers missing-ids (which
// changes nothing), so that an entry of several commands, a restore's of
// several roots, is undone as often as one of one; else a drawn number of
// ids, too few or too many. Now and then an id is a pending one, or the
// same id twice.
func (g *windowGen) undoRedo(redo bool, pending []kbcore.Command) map[string]any {
	s := g.s
	var ids []string
	mint := func() {
		g.undos++
		id := fmt.Sprintf("u%d", g.undos)
		switch k := s.Intn(20); {
		case k == 19 && len(pending) > 0:
			id = pending[0].ID
		case k >= 17 && len(ids) > 0: // the same id twice
			id = ids[len(ids)-1]
		}
		ids = append(ids, id)
	}
	do := func() []kbcore.Action {
		if redo {
			return g.w.Redo(ids)
		}
		return g.w.Undo(ids)
	}
	if fit := s.Chance(75); fit {
		mint()
		for acts := do(); len(ids) < 4 && len(acts) == 1 && acts[0].Code == kbcore.ToastMissingIDs; acts = do() {
			mint()
		}
	} else {
		for range pickWeighted(s, []int{1, 2, 3, 0}, []int{4, 3, 2, 1}) {
			mint()
		}
		do()
	}
	g.issued = ids
	list := []any{}
	for _, id := range ids {
		list = append(list, id)
	}
	if redo {
		return map[string]any{"redo": map[string]any{"ids": list}}
	}
	return map[string]any{"undo": map[string]any{"ids": list}}
}

// genSnapshot draws a snapshot for w: the server document, or the rendered
// one (as if every pending command committed), at a seq near the window's,
// with outcomes for some pending ids.
func genSnapshot(s *Source, w *kbcore.Window) (kbcore.Doc, int64, map[string]any) {
	doc := w.Server()
	committed := s.Chance(50)
	if committed {
		doc = w.Rendered()
	}
	at := max(w.Seq()+int64(Pick(s, []int{1, 0, 2, -1})), 0)
	outcomes := map[string]any{}
	for _, c := range w.Pending() {
		switch s.Intn(4) {
		case 1:
			seq := at
			if other := s.Chance(20); !committed || other {
				seq = int64(Pick(s, []int{0, 1, 2, 5}))
			}
			outcomes[c.ID] = map[string]any{"seq": float64(seq)}
		case 2:
			outcomes[c.ID] = map[string]any{"rejected": map[string]any{"code": kbcore.CodeNodeNotFound, "message": "gone"}}
		}
	}
	return doc, at, outcomes
}
