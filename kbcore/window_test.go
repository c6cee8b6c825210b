package kbcore_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/subspace/kbkit/kbcore"
)

// A simulated sync system: one server holding the page's command log and
// 2-3 windows. Each window's sends reach the server in send order but at
// random times; each window receives the server's messages (echoes in seq
// order, rejections of its own commands) in order but at random times, and
// some echoes are dropped, which forces gap -> refetch -> snapshot.

// winMsg is one message from the server to a window: an echo (seq > 0), a
// rejection of one of the window's commands (code), or the answer that
// one was committed at seq (ack).
type winMsg struct {
	seq  int64
	cmd  kbcore.Command
	id   string
	code string
	ack  bool
}

type winServer struct {
	docs     []kbcore.Doc // docs[s] is the fold of the first s commands of the log
	log      []kbcore.Command
	outcomes map[string]kbcore.Outcome
}

func (s *winServer) seq() int64      { return int64(len(s.log)) }
func (s *winServer) doc() kbcore.Doc { return s.docs[len(s.docs)-1] }

type winClient struct {
	w      *kbcore.Window
	outbox []kbcore.Command
	// waiting is the last command sent and not yet seen decided.
	waiting string
	inbox   []winMsg
	// asked is set by a refetch until the server reads the snapshot, which
	// then travels in inflight until delivered (possibly after a newer one).
	// askedIDs are the ids the refetch's request lists: the window's
	// pending ids when it asked (commands posted later are not in it).
	asked    bool
	askedIDs []string
	inflight []winSnap
	lastSeq  int64
	sent     map[string]bool // every id the window ever sent
	acked    map[string]bool // ids whose commit answer the window has had
}

// winSnap is a snapshot read by the server: the page at seq and the
// outcomes of the ids pending in the window when it asked.
type winSnap struct {
	doc      kbcore.Doc
	seq      int64
	outcomes map[string]kbcore.Outcome
}

type winSim struct {
	t       *rapid.T
	srv     winServer
	clients []*winClient
	next    int
	known   []string // every node id ever named, live or not
	// shared[seq] is the server document before and after echo seq in
	// the first window that applied it: the others take it with
	// EchoShared (when their document is the same value) half the time.
	shared map[int64][2]kbcore.Doc
}

func (s *winSim) id(ci int) string {
	s.next++
	return fmt.Sprintf("w%dc%d", ci, s.next)
}

// receive is the server taking one command from window ci. A command id it
// has seen before is a retry and is deduplicated.
// Each send is answered (a commit as an ack, a rejection as one), in the
// window's inbox with its echoes.
func (s *winSim) receive(ci int, c kbcore.Command) {
	if o, seen := s.srv.outcomes[c.ID]; seen {
		m := winMsg{id: c.ID, seq: o.Seq, ack: true}
		if o.Rejected != nil {
			m = winMsg{id: c.ID, code: o.Rejected.Code}
		}
		s.clients[ci].inbox = append(s.clients[ci].inbox, m)
		return
	}
	res := kbcore.Apply(s.srv.doc(), c)
	if res.Rejected != nil {
		s.srv.outcomes[c.ID] = kbcore.Outcome{Rejected: res.Rejected}
		s.clients[ci].inbox = append(s.clients[ci].inbox, winMsg{id: c.ID, code: res.Rejected.Code})
		return
	}
	s.srv.log = append(s.srv.log, c)
	s.srv.docs = append(s.srv.docs, res.Doc)
	s.srv.outcomes[c.ID] = kbcore.Outcome{Seq: s.srv.seq()}
	ack := winMsg{id: c.ID, seq: s.srv.seq(), ack: true}
	ackFirst := rapid.Bool().Draw(s.t, "ack-first")
	for i, cl := range s.clients {
		if i == ci && ackFirst {
			cl.inbox = append(cl.inbox, ack)
		}
		cl.inbox = append(cl.inbox, winMsg{seq: s.srv.seq(), cmd: c})
		if i == ci && !ackFirst {
			cl.inbox = append(cl.inbox, ack)
		}
	}
}

// sendNext delivers the client's next command to the server, stop-and-wait
// as spec/window.md requires: only once the previously sent command is no
// longer pending in the window (decided), and skipping commands the window
// dropped before they could be sent (undos of a rejected command).
func (s *winSim) sendNext(ci int) bool {
	cl := s.clients[ci]
	if cl.waiting != "" && s.isPending(ci, cl.waiting) && !cl.acked[cl.waiting] {
		return false
	}
	for len(cl.outbox) > 0 {
		c := cl.outbox[0]
		cl.outbox = cl.outbox[1:]
		if !s.isPending(ci, c.ID) {
			continue
		}
		cl.waiting = c.ID
		s.receive(ci, c)
		return true
	}
	return false
}

func (s *winSim) isPending(ci int, id string) bool {
	for _, p := range s.clients[ci].w.Pending() {
		if p.ID == id {
			return true
		}
	}
	return false
}

// handle performs a window's actions; wasAwaiting is the window's state
// before the event.
func (s *winSim) handle(ci int, what string, wasAwaiting bool, acts []kbcore.Action) {
	cl := s.clients[ci]
	for _, a := range acts {
		switch a.Kind {
		case kbcore.ActionSend:
			found := false
			for _, p := range cl.w.Pending() {
				if p.ID == a.ID {
					cl.outbox = append(cl.outbox, p)
					cl.sent[p.ID] = true
					found = true
				}
			}
			if !found {
				s.t.Fatalf("window %d after %s: send:%s is not pending", ci, what, a.ID)
			}
		case kbcore.ActionRefetch:
			if wasAwaiting {
				s.t.Fatalf("window %d after %s: a second refetch while awaiting", ci, what)
			}
			if !cl.w.Awaiting() {
				s.t.Fatalf("window %d after %s: refetch but not awaiting", ci, what)
			}
			cl.asked = true
			cl.askedIDs = cl.askedIDs[:0]
			for _, p := range cl.w.Pending() {
				cl.askedIDs = append(cl.askedIDs, p.ID)
			}
		case kbcore.ActionToast:
			if a.Code == "" {
				s.t.Fatalf("window %d after %s: toast without code", ci, what)
			}
		default:
			s.t.Fatalf("window %d after %s: unknown action %+v", ci, what, a)
		}
	}
	s.check(ci, what)
}

// check compares window ci with an independent computation: its server
// document is the fold of the log up to its seq, and rendered is that
// document with its pending commands applied in order, rejected ones skipped.
func (s *winSim) check(ci int, what string) {
	cl := s.clients[ci]
	w := cl.w
	if w.Seq() < cl.lastSeq || w.Seq() > s.srv.seq() {
		s.t.Fatalf("window %d after %s: seq %d outside %d..%d", ci, what, w.Seq(), cl.lastSeq, s.srv.seq())
	}
	cl.lastSeq = w.Seq()
	if want := s.srv.docs[w.Seq()]; !w.Server().Equal(want) {
		s.t.Fatalf("window %d after %s: server at seq %d:\nwant %s\ngot  %s", ci, what, w.Seq(), winJSON(want), winJSON(w.Server()))
	}
	d := w.Server()
	seen := map[string]bool{}
	for _, p := range w.Pending() {
		if seen[p.ID] {
			s.t.Fatalf("window %d after %s: id %s pending twice", ci, what, p.ID)
		}
		seen[p.ID] = true
		if r := kbcore.Apply(d, p); r.Rejected == nil {
			d = r.Doc
		}
	}
	// An own command the server committed after the window's seq is not in
	// the window's server document yet, so it must still be pending.
	for id := range cl.sent {
		if o := s.srv.outcomes[id]; o.Seq > w.Seq() && !seen[id] {
			s.t.Fatalf("window %d after %s: %s committed at seq %d > %d but no longer pending", ci, what, id, o.Seq, w.Seq())
		}
	}
	if !w.Rendered().Equal(d) {
		s.t.Fatalf("window %d after %s: rendered != fold(server, pending):\nwant %s\ngot  %s", ci, what, winJSON(d), winJSON(w.Rendered()))
	}
	if err := w.Rendered().Check(); err != nil {
		s.t.Fatalf("window %d after %s: rendered: %v", ci, what, err)
	}
}

// read is the server reading a snapshot for window ci: the page lag
// commands ago (the page and the outcomes are read one after the other, so
// an outcome may be newer than the page), with the outcomes it knows of
// ids: those the refetch's request listed, or (nil) the window's pending
// ids now. A command posted after the request left is not listed, and
// may be in the page (spec/window.md: the ack of its resend settles it).
func (s *winSim) read(ci int, lag int64, ids []string) winSnap {
	seq := max(s.srv.seq()-lag, 0)
	outcomes := map[string]kbcore.Outcome{}
	if ids == nil {
		for _, p := range s.clients[ci].w.Pending() {
			ids = append(ids, p.ID)
		}
	}
	for _, id := range ids {
		if o, ok := s.srv.outcomes[id]; ok {
			outcomes[id] = o
		}
	}
	return winSnap{doc: s.srv.docs[seq], seq: seq, outcomes: outcomes}
}

// snapshot delivers a snapshot to window ci. One older than the window's
// seq must be ignored; any other ends the wait.
func (s *winSim) snapshot(ci int, sn winSnap) {
	cl := s.clients[ci]
	w := cl.w
	stale := sn.seq < w.Seq()
	before := winJSON(w.Rendered())
	aw := w.Awaiting()
	acts := w.Snapshot(sn.doc, sn.seq, sn.outcomes)
	s.handle(ci, fmt.Sprintf("snapshot at seq %d", sn.seq), aw, acts)
	switch {
	case stale && (len(acts) > 0 || winJSON(w.Rendered()) != before || w.Awaiting() != aw):
		s.t.Fatalf("window %d: a stale snapshot (seq %d < %d) changed something", ci, sn.seq, cl.lastSeq)
	case !stale && w.Awaiting():
		s.t.Fatalf("window %d still awaiting after a snapshot", ci)
	}
}

// reconnect loses everything in flight between window ci and the server
// and resynchronises the window with a fresh snapshot.
func (s *winSim) reconnect(ci int) {
	cl := s.clients[ci]
	cl.outbox, cl.inbox, cl.asked = nil, nil, false
	s.snapshot(ci, s.read(ci, 0, nil))
}

// deliver hands window ci its next message from the server.
func (s *winSim) deliver(ci int, drop bool) {
	cl := s.clients[ci]
	m := cl.inbox[0]
	cl.inbox = cl.inbox[1:]
	aw := cl.w.Awaiting()
	if m.ack {
		if m.id == cl.waiting {
			cl.acked[m.id] = true
		}
		s.handle(ci, fmt.Sprintf("ack %s at %d", m.id, m.seq), aw, cl.w.Ack(m.id, m.seq))
		return
	}
	if m.seq == 0 {
		s.handle(ci, "reject "+m.id, aw, cl.w.Reject(m.id, m.code))
		return
	}
	if drop {
		return
	}
	before := cl.w.Server()
	var acts []kbcore.Action
	sh, ok := s.shared[m.seq]
	if ok && rapid.Bool().Draw(s.t, "shared") {
		acts = cl.w.EchoShared(m.seq, m.cmd, sh[0], sh[1])
	} else {
		acts = cl.w.Echo(m.seq, m.cmd)
	}
	if !ok && cl.w.Seq() == m.seq {
		if s.shared == nil {
			s.shared = map[int64][2]kbcore.Doc{}
		}
		s.shared[m.seq] = [2]kbcore.Doc{before, cl.w.Server()}
	}
	s.handle(ci, fmt.Sprintf("echo %d (%s %s %s)", m.seq, m.cmd.ID, m.cmd.Type, m.cmd.Payload), aw, acts)
}

// local makes a random user edit in window ci, on a live or a stale node.
// When it is accepted, the redo stack is empty and the undo stack is not
// (probed with no ids, which changes nothing); with undoNow it is undone at
// once, which must give back the rendered document from before.
func (s *winSim) local(ci int, undoNow bool) {
	w := s.clients[ci].w
	var live []string
	for _, n := range w.Rendered().Nodes() {
		live = append(live, n.ID)
	}
	pick := func(label string) string {
		switch k := rapid.IntRange(0, 9).Draw(s.t, label+"-from"); {
		case k < 7 && len(live) > 0:
			return rapid.SampledFrom(live).Draw(s.t, label)
		case k < 9 && len(s.known) > 0:
			return rapid.SampledFrom(s.known).Draw(s.t, label)
		}
		return "ghost"
	}
	nullable := func(label string) any {
		if rapid.IntRange(0, 2).Draw(s.t, label+"-null") == 0 {
			return nil
		}
		return pick(label)
	}
	id := s.id(ci)
	typ := rapid.SampledFrom([]string{kbcore.TypeEditText, kbcore.TypeCreateAfter, kbcore.TypeCreateAfter,
		kbcore.TypeDelete, kbcore.TypeMoveNode, kbcore.TypeMoveNode, kbcore.TypeIndent, kbcore.TypeOutdent}).Draw(s.t, "type")
	p := map[string]any{}
	switch typ {
	case kbcore.TypeEditText:
		p["node"], p["text"] = pick("node"), id
	case kbcore.TypeCreateAfter:
		if len(live) == 0 || rapid.IntRange(0, 4).Draw(s.t, "first?") == 0 {
			p["parent"] = nullable("parent")
		} else {
			p["after"] = pick("after")
		}
		p["text"] = "t" + id
		s.known = append(s.known, id)
	case kbcore.TypeMoveNode:
		p["node"], p["parent"], p["after"] = pick("node"), nullable("parent"), nullable("after")
	default:
		p["node"] = pick("node")
	}
	b, _ := json.Marshal(p)
	c := kbcore.Command{ID: id, Type: typ, Payload: b}
	before, aw := winJSON(w.Rendered()), w.Awaiting()
	acts := w.Local(c)
	s.handle(ci, fmt.Sprintf("local %s %s %s", c.ID, c.Type, c.Payload), aw, acts)
	if len(acts) != 1 {
		s.t.Fatalf("local: %d actions", len(acts))
	}
	if acts[0].Kind != kbcore.ActionSend {
		if winJSON(w.Rendered()) != before {
			s.t.Fatalf("a locally rejected command changed rendered")
		}
		return
	}
	if a := w.Redo(nil); len(a) != 1 || a[0].String() != "toast:nothing-to-redo" {
		s.t.Fatalf("after an accepted local command, redo(no ids) gave %v", a)
	}
	if a := w.Undo(nil); len(a) != 1 || a[0].String() != "toast:missing-ids" {
		s.t.Fatalf("after an accepted local command, undo(no ids) gave %v", a)
	}
	if undoNow {
		ids := []string{s.id(ci), s.id(ci), s.id(ci)}
		acts := w.Undo(ids)
		s.handle(ci, fmt.Sprintf("undo %v", ids), w.Awaiting(), acts)
		for _, a := range acts {
			if a.Kind != kbcore.ActionSend {
				s.t.Fatalf("undo right after %s: %v", c.Type, acts)
			}
			if r := w.Reverts(a.ID); len(r) != 1 || r[0] != c.ID {
				s.t.Fatalf("undo command %s of %s reverts %v, want [%s]", a.ID, c.ID, r, c.ID)
			}
		}
		if r := w.Reverts(c.ID); r != nil {
			s.t.Fatalf("a command that is no undo reverts %v", r)
		}
		if winJSON(w.Rendered()) != before {
			s.t.Fatalf("undo right after %s:\nwant %s\ngot  %s", c.Type, before, winJSON(w.Rendered()))
		}
	}
}

// undoRedo undoes or redoes in window ci, with fresh ids.
func (s *winSim) undoRedo(ci int) {
	w := s.clients[ci].w
	ids := []string{s.id(ci), s.id(ci), s.id(ci)}
	if rapid.Bool().Draw(s.t, "undo?") {
		s.handle(ci, fmt.Sprintf("undo %v", ids), w.Awaiting(), w.Undo(ids))
	} else {
		s.handle(ci, fmt.Sprintf("redo %v", ids), w.Awaiting(), w.Redo(ids))
	}
}

func winJSON(d kbcore.Doc) string {
	b, _ := d.MarshalJSON()
	return string(b)
}

func winStartDoc() kbcore.Doc {
	d, err := kbcore.NewDoc(kbcore.Page{ID: "00000000-0000-0000-0000-000000000001", Title: "P"}, []kbcore.Node{
		{ID: "a", Rank: "a0", Text: "A"},
		{ID: "b", Rank: "a1", Text: "B"},
		{ID: "k", Parent: "a", Rank: "a0", Text: "K"},
	})
	if err != nil {
		panic(err)
	}
	return d
}

func TestRapidWindowsConverge(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		start := winStartDoc()
		s := &winSim{t: t, srv: winServer{docs: []kbcore.Doc{start}, outcomes: map[string]kbcore.Outcome{}},
			known: []string{"a", "b", "k"}}
		n := rapid.IntRange(2, 3).Draw(t, "windows")
		for range n {
			s.clients = append(s.clients, &winClient{w: kbcore.NewWindow(start, 0), sent: map[string]bool{}, acked: map[string]bool{}})
		}
		steps := rapid.IntRange(1, 120).Draw(t, "steps")
		for range steps {
			ci := rapid.IntRange(0, n-1).Draw(t, "window")
			cl := s.clients[ci]
			switch op := rapid.IntRange(0, 14).Draw(t, "op"); {
			case op < 3:
				s.local(ci, false)
			case op == 3:
				s.local(ci, true)
			case op == 4:
				s.undoRedo(ci)
			case op < 8:
				s.sendNext(ci)
			case op < 12:
				if len(cl.inbox) > 0 {
					s.deliver(ci, rapid.IntRange(0, 7).Draw(t, "drop") == 0)
				}
			case op == 12:
				if cl.asked {
					cl.asked = false
					lag := int64(rapid.IntRange(0, 2).Draw(t, "lag"))
					cl.inflight = append(cl.inflight, s.read(ci, lag, append([]string{}, cl.askedIDs...)))
				}
			case op == 13:
				if len(cl.inflight) > 0 {
					i := rapid.IntRange(0, len(cl.inflight)-1).Draw(t, "snapshot")
					sn := cl.inflight[i]
					cl.inflight = append(cl.inflight[:i:i], cl.inflight[i+1:]...)
					s.snapshot(ci, sn)
				}
			default:
				if rapid.IntRange(0, 3).Draw(t, "reconnect?") == 0 {
					s.reconnect(ci)
				}
			}
		}
		// Quiescence: deliver everything, without drops; a window that
		// missed trailing echoes (no later echo showed it a gap) catches up
		// with a snapshot, as a reconnect would. A refetch still asked for
		// lists the ids it listed when asked: a command posted since, and
		// committed in the snapshot, must leave pending by the ack of its
		// resend (spec/window.md), or the window ends with it pending.
		for round := 0; ; round++ {
			if round > 100 {
				t.Fatalf("no quiescence after %d rounds", round)
			}
			progress := false
			for ci := range s.clients {
				if s.sendNext(ci) {
					progress = true
				}
			}
			for ci, cl := range s.clients {
				for len(cl.inbox) > 0 {
					s.deliver(ci, false)
					progress = true
				}
			}
			for ci, cl := range s.clients {
				for _, sn := range cl.inflight {
					s.snapshot(ci, sn)
					progress = true
				}
				cl.inflight = nil
				switch {
				case cl.asked:
					cl.asked = false
					s.snapshot(ci, s.read(ci, 0, append([]string{}, cl.askedIDs...)))
					progress = true
				case len(cl.inbox) == 0 && cl.w.Seq() < s.srv.seq():
					s.snapshot(ci, s.read(ci, 0, nil))
					progress = true
				}
			}
			if !progress {
				break
			}
		}
		for ci, cl := range s.clients {
			w := cl.w
			switch {
			case w.Seq() != s.srv.seq():
				t.Fatalf("window %d: seq %d, server %d", ci, w.Seq(), s.srv.seq())
			case len(w.Pending()) != 0:
				t.Fatalf("window %d: still pending %v", ci, w.Pending())
			case w.Awaiting():
				t.Fatalf("window %d: still awaiting", ci)
			case !w.Server().Equal(s.srv.doc()):
				t.Fatalf("window %d: server:\nwant %s\ngot  %s", ci, winJSON(s.srv.doc()), winJSON(w.Server()))
			case !w.Rendered().Equal(s.srv.doc()):
				t.Fatalf("window %d: rendered:\nwant %s\ngot  %s", ci, winJSON(s.srv.doc()), winJSON(w.Rendered()))
			}
		}
	})
}

// TestEchoSharedTakesTheSharedDoc: a window whose server document is the
// one another window applied an echo to takes that window's result (the
// same value); a window with an equal document built apart applies the
// echo itself, to an equal result.
func TestEchoSharedTakesTheSharedDoc(t *testing.T) {
	docJSON := []byte(`{"page":{"id":"p","title":"P"},"nodes":[{"id":"n1","rank":"a0","text":"x"}]}`)
	d, err := kbcore.ParseDoc(docJSON)
	if err != nil {
		t.Fatal(err)
	}
	apart, _ := kbcore.ParseDoc(docJSON)
	a, b, c := kbcore.NewWindow(d, 1), kbcore.NewWindow(d, 1), kbcore.NewWindow(apart, 1)
	cmd := kbcore.Command{ID: "c2", Type: kbcore.TypeEditText, Payload: json.RawMessage(`{"node":"n1","text":"xy"}`)}
	prev := a.Server()
	a.Echo(2, cmd)
	next := a.Server()
	b.EchoShared(2, cmd, prev, next)
	c.EchoShared(2, cmd, prev, next)
	if !b.Server().Same(next) || !b.Rendered().Same(next) {
		t.Fatal("b did not take the shared document")
	}
	if c.Server().Same(next) || !c.Server().Equal(next) || c.Seq() != 2 {
		t.Fatalf("c: same %v, equal %v, seq %d", c.Server().Same(next), c.Server().Equal(next), c.Seq())
	}
	if d.Same(apart) || !d.Same(d) {
		t.Fatal("Same of documents parsed apart")
	}
}

// TestRapidNodeAtIsWalkOrder: NodeAt(k) is the k-th node Walk visits.
func TestRapidNodeAtIsWalkOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := bornPage()
		for i := rapid.IntRange(0, 40).Draw(t, "steps"); i > 0; i-- {
			if r := kbcore.Apply(d, drawCommand(t, d, i)); r.Rejected == nil {
				d = r.Doc
			}
		}
		var walked []kbcore.Node
		d.Walk(func(n kbcore.Node) bool { walked = append(walked, n); return true })
		for k := -1; k <= len(walked); k++ {
			n, ok := d.NodeAt(k)
			switch {
			case k < 0 || k == len(walked):
				if ok {
					t.Fatalf("NodeAt(%d) of %d nodes: %+v", k, len(walked), n)
				}
			case !ok || mustJSON(n) != mustJSON(walked[k]):
				t.Fatalf("NodeAt(%d) = %+v %v, Walk has %+v", k, n, ok, walked[k])
			}
		}
	})
}

// TestRejectDoesNotCopyTheHistory: a rejection forgets the undo entry of
// the rejected command without copying the undo stack, which grows with
// every own command: its allocations are the same after 10 and after 5,000
// settled commands (a copy per rejection made a long run quadratic).
func TestRejectDoesNotCopyTheHistory(t *testing.T) {
	edit := func(id, text string) kbcore.Command {
		return kbcore.Command{ID: id, Type: kbcore.TypeEditText, Payload: json.RawMessage(`{"node":"a","text":"` + text + `"}`)}
	}
	allocs := func(history int) float64 {
		w := kbcore.NewWindow(winStartDoc(), 0)
		for i := range history {
			c := edit(fmt.Sprintf("h%d", i), fmt.Sprint(i))
			w.Local(c)
			w.Echo(int64(i+1), c)
		}
		if len(w.Pending()) != 0 {
			t.Fatalf("%d commands still pending after their echoes", len(w.Pending()))
		}
		ids := make([]string, 64)
		for i := range ids {
			ids[i] = fmt.Sprintf("r%d", i)
		}
		n := 0
		return testing.AllocsPerRun(20, func() {
			c := edit(ids[n%len(ids)], "r")
			n++
			w.Local(c)
			if acts := w.Reject(c.ID, "x"); len(acts) != 1 {
				t.Fatalf("the rejection of a pending command gave %v", acts)
			}
		})
	}
	small, big := allocs(10), allocs(5000)
	if big > small+1 {
		t.Fatalf("a rejection allocated %.0f times after 5,000 settled commands, %.0f after 10: the undo history is copied", big, small)
	}
	// Undo still reaches the entries the rejections left.
	w := kbcore.NewWindow(winStartDoc(), 0)
	w.Local(edit("u1", "one"))
	w.Local(edit("u2", "two"))
	w.Local(edit("u3", "three"))
	w.Reject("u2", "x")
	if acts := w.Undo([]string{"v1"}); len(acts) != 1 || acts[0].Kind != kbcore.ActionSend {
		t.Fatalf("undo after a rejection: %v", acts)
	}
}

// TestLimitUndo: a window limited to n steps undoes its last n own steps
// and then answers nothing-to-undo, renders as an unlimited one, toasts a
// rejected command as one, and with n = 0 keeps no history at all (every
// undo: nothing-to-undo).
func TestLimitUndo(t *testing.T) {
	edit := func(id, text string) kbcore.Command {
		return kbcore.Command{ID: id, Type: kbcore.TypeEditText, Payload: json.RawMessage(`{"node":"a","text":"` + text + `"}`)}
	}
	for _, n := range []int{0, 1, 3} {
		w, free := kbcore.NewWindow(winStartDoc(), 0), kbcore.NewWindow(winStartDoc(), 0)
		w.LimitUndo(n)
		for i := range 10 {
			c := edit(fmt.Sprintf("e%d", i), fmt.Sprint(i))
			for _, x := range []*kbcore.Window{w, free} {
				if acts := x.Local(c); len(acts) != 1 || acts[0].Kind != kbcore.ActionSend {
					t.Fatalf("limit %d: local %s gave %v", n, c.ID, acts)
				}
			}
			if !w.Rendered().Equal(free.Rendered()) {
				t.Fatalf("limit %d: renders apart from an unlimited window after %s", n, c.ID)
			}
		}
		// A command the reducer rejects is a toast naming it, whatever
		// the limit, and changes nothing.
		bad := kbcore.Command{ID: "bad", Type: kbcore.TypeEditText, Payload: json.RawMessage(`{"node":"missing","text":"x"}`)}
		for _, x := range []*kbcore.Window{w, free} {
			if acts := x.Local(bad); len(acts) != 1 || acts[0].Kind != kbcore.ActionToast || acts[0].Code != kbcore.CodeNodeNotFound || acts[0].ID != "bad" {
				t.Fatalf("limit %d: a rejected local command gave %v, want a node-not-found toast naming bad", n, acts)
			}
		}
		if !w.Rendered().Equal(free.Rendered()) {
			t.Fatalf("limit %d: renders apart from an unlimited window after a rejection", n)
		}
		for k := range n + 1 {
			a, b := w.Undo([]string{fmt.Sprintf("u%d", k)}), free.Undo([]string{fmt.Sprintf("u%d", k)})
			if k < n {
				if len(a) != 1 || a[0].Kind != kbcore.ActionSend || !w.Rendered().Equal(free.Rendered()) {
					t.Fatalf("limit %d: undo %d gave %v (unlimited: %v)", n, k, a, b)
				}
				continue
			}
			if len(a) != 1 || a[0].Kind != kbcore.ActionToast || a[0].Code != kbcore.ToastNothingToUndo {
				t.Fatalf("limit %d: undo %d past the limit gave %v, want nothing-to-undo", n, k, a)
			}
		}
		// The redo history holds the undone steps, within the limit.
		for k := range n + 1 {
			a := w.Redo([]string{fmt.Sprintf("r%d", k)})
			want := k < n
			if got := len(a) == 1 && a[0].Kind == kbcore.ActionSend; got != want {
				t.Fatalf("limit %d: redo %d gave %v", n, k, a)
			}
		}
	}
}

// TestToastIDs: a toast names the command it rejects (spec/window.md), and
// the toasts of undo's and redo's checks, which issue nothing, name none.
func TestToastIDs(t *testing.T) {
	doc, err := kbcore.ParseDoc([]byte(`{"nodes":[{"id":"a","kind":"text","parent":null,"rank":"a0","text":"A"}],"page":{"aliases":[],"dir":"","id":"00000000-0000-0000-0000-000000000001","merged_into":null,"title":"P"}}`))
	if err != nil {
		t.Fatal(err)
	}
	cmd := func(id, typ, payload string) kbcore.Command {
		return kbcore.Command{ID: id, Type: typ, Payload: json.RawMessage(payload)}
	}
	restore := cmd("c1", "restore", `{"nodes":[{"id":"x","rank":"a1","text":"X"},{"id":"y","rank":"a2","text":"Y"}]}`)
	toast := func(what string, acts []kbcore.Action, code, id string) {
		t.Helper()
		for _, a := range acts {
			if a.Kind == kbcore.ActionToast {
				if a.Code != code || a.ID != id {
					t.Errorf("%s: toast %s naming %q, want %s naming %q", what, a.Code, a.ID, code, id)
				}
				return
			}
		}
		t.Errorf("%s: no toast in %v", what, acts)
	}
	w := kbcore.NewWindow(doc, 0)
	toast("undo on an empty stack", w.Undo([]string{"u0"}), kbcore.ToastNothingToUndo, "")
	toast("redo on an empty stack", w.Redo([]string{"r0"}), kbcore.ToastNothingToRedo, "")
	toast("local the reducer rejects", w.Local(cmd("c0", kbcore.TypeEditText, `{"node":"ghost","text":"x"}`)), "node-not-found", "c0")
	if acts := w.Local(restore); len(acts) != 1 || acts[0].Kind != kbcore.ActionSend {
		t.Fatalf("local c1: %v", acts)
	}
	toast("local with a pending id", w.Local(cmd("c1", kbcore.TypeEditText, `{"node":"a","text":"x"}`)), kbcore.ToastDuplicateID, "c1")
	toast("undo with too few ids", w.Undo([]string{"u1"}), kbcore.ToastMissingIDs, "")
	toast("undo with a pending id", w.Undo([]string{"u1", "c1"}), kbcore.ToastDuplicateID, "")
	toast("undo with an id twice", w.Undo([]string{"u1", "u1"}), kbcore.ToastDuplicateID, "")
	w.Echo(1, restore)
	w.Echo(2, cmd("f1", kbcore.TypeDelete, `{"node":"y"}`))
	toast("undo stopped by the reducer", w.Undo([]string{"u1", "u2"}), "node-not-found", "u2")
	toast("reject", w.Reject("u1", "page-not-found"), "page-not-found", "u1")
	w.Local(cmd("c2", kbcore.TypeEditText, `{"node":"a","text":"x"}`))
	toast("snapshot rejection", w.Snapshot(doc, 2, map[string]kbcore.Outcome{"c2": {Rejected: &kbcore.Rejection{Code: "node-not-found"}}}), "node-not-found", "c2")
}
