package kbcore

// Window is the client sync state machine of one open page (spec/window.md):
// the server's document at the last applied seq, and this window's own
// commands not yet echoed. It is synchronous and pure, like raft's RawNode:
// each event returns the actions the caller must perform, in order; the
// transport that sends, refetches and toasts is a wrapper around it.
//
// The rendered document is always fold(Server, Pending). A pending command
// that no longer applies after a rebase stays pending (and renders as
// nothing) until the server's verdict arrives: only the server decides.
type Window struct {
	server   Doc
	seq      int64
	pending  []Command
	rendered Doc
	// stale: rendered is behind (server or pending changed since it was
	// folded); Rendered folds it when asked, so that a window fed many
	// echoes between its own edits folds its pending commands once.
	stale bool
	// awaiting is set after a seq gap: later echoes are ignored until a
	// snapshot arrives.
	awaiting bool
	undo     undoStack
	redo     undoStack
	// reverts maps a pending undo or redo command to the ids of the
	// commands it reverts: if one of those is rejected, the undo has
	// nothing to revert and is dropped with it.
	reverts map[string][]string
}

// undoEntry is how to revert one own command (or one undo or redo step):
// the commands to issue, and the id of the command it reverts, so that a
// rejection of that command also forgets the entry.
type undoEntry struct {
	ids []string
	cmd []Command
}

// undoStack is the undo or the redo history, with how many times each id
// appears in its entries, so that forgetting a rejected command's entries
// looks only as far down as they are, not at every entry of the window's
// life (the history grows with every own command).
type undoStack struct {
	entries []undoEntry
	ids     map[string]int
	// limited: at most max entries, the oldest dropped (Window.LimitUndo);
	// else without bound, as spec/window.md.
	limited bool
	max     int
}

func (s *undoStack) push(e undoEntry) {
	if s.limited && s.max == 0 {
		return
	}
	if s.ids == nil {
		s.ids = map[string]int{}
	}
	for _, id := range e.ids {
		s.ids[id]++
	}
	s.entries = append(s.entries, e)
	s.trim()
}

// trim drops the oldest entries past the limit.
func (s *undoStack) trim() {
	for s.limited && len(s.entries) > s.max {
		s.uncount(s.entries[0])
		s.entries[0] = undoEntry{}
		s.entries = s.entries[1:]
	}
}

func (s *undoStack) uncount(e undoEntry) {
	for _, id := range e.ids {
		if s.ids[id]--; s.ids[id] <= 0 {
			delete(s.ids, id)
		}
	}
}

// pop removes the top entry; the stack is not empty.
func (s *undoStack) pop() undoEntry {
	e := s.entries[len(s.entries)-1]
	s.entries[len(s.entries)-1] = undoEntry{}
	s.entries = s.entries[:len(s.entries)-1]
	s.uncount(e)
	return e
}

func (s *undoStack) clear() { *s = undoStack{limited: s.limited, max: s.max} }

// forget removes every entry made from command id, in place, looking down
// from the top only as far as the lowest of them.
func (s *undoStack) forget(id string) {
	n := s.ids[id]
	if n == 0 {
		return
	}
	lo := len(s.entries)
	for n > 0 && lo > 0 {
		lo--
		for _, x := range s.entries[lo].ids {
			if x == id {
				n--
			}
		}
	}
	kept := s.entries[:lo]
	for _, e := range s.entries[lo:] {
		if contains(e.ids, id) {
			s.uncount(e)
			continue
		}
		kept = append(kept, e)
	}
	clear(s.entries[len(kept):])
	s.entries = kept
}

// Action is work the caller must do after an event, in order.
type Action struct {
	// Kind is ActionSend (post command ID to the server, retrying with the
	// same id), ActionRefetch (fetch a snapshot of the page with the outcomes
	// of the pending ids) or ActionToast (tell the user Code; ID is the
	// command it rejects, empty for the toasts of undo's and redo's checks,
	// which reject none: spec/window.md).
	Kind string
	ID   string
	Code string
}

// Action kinds.
const (
	ActionSend    = "send"
	ActionRefetch = "refetch"
	ActionToast   = "toast"
)

// Window-level toast codes (rejection codes are toasted as they are).
const (
	ToastNothingToUndo = "nothing-to-undo"
	ToastNothingToRedo = "nothing-to-redo"
	ToastMissingIDs    = "missing-ids"
	ToastDuplicateID   = "duplicate-id"
)

// String is the action as spec/window.yaml writes it: send:<id>, refetch,
// toast:<code>.
func (a Action) String() string {
	switch a.Kind {
	case ActionSend:
		return "send:" + a.ID
	case ActionToast:
		return "toast:" + a.Code
	}
	return a.Kind
}

// Outcome is what a snapshot reports about one pending id: committed at Seq,
// or Rejected.
type Outcome struct {
	Seq      int64      `json:"seq,omitempty"`
	Rejected *Rejection `json:"rejected,omitempty"`
}

// NewWindow opens a page at the server's document and seq.
func NewWindow(doc Doc, seq int64) *Window {
	return &Window{server: doc, seq: seq, rendered: doc}
}

// Seq is the seq of the last echo applied to the server document.
func (w *Window) Seq() int64 { return w.seq }

// Server is the server's document as of Seq.
func (w *Window) Server() Doc { return w.server }

// Rendered is what the user sees: fold(Server, Pending). It folds when
// the fold is behind, so, like every method, it must not run concurrently
// with another on the same window.
func (w *Window) Rendered() Doc {
	if w.stale {
		d := w.server
		for _, c := range w.pending {
			d = applyDoc(d, c)
		}
		w.rendered, w.stale = d, false
	}
	return w.rendered
}

// Pending returns this window's unechoed commands in send order.
func (w *Window) Pending() []Command { return append([]Command(nil), w.pending...) }

// Awaiting reports whether the window saw a gap and waits for a snapshot.
func (w *Window) Awaiting() bool { return w.awaiting }

func (w *Window) isPending(id string) bool {
	for _, c := range w.pending {
		if c.ID == id {
			return true
		}
	}
	return false
}

// Local applies a command the user made. Accepted: it becomes pending and
// must be sent. Rejected locally: it is dropped and toasted.
func (w *Window) Local(c Command) []Action {
	acts := w.issue([]Command{c}, nil)
	if len(acts) > 0 && acts[len(acts)-1].Kind == ActionSend {
		w.redo.clear() // a new edit ends the redo history
	}
	return acts
}

// issue applies commands to the rendered document one by one, stopping at
// the first rejection, and records how to revert the accepted ones.
func (w *Window) issue(cmds []Command, stack *undoStack) []Action {
	var acts []Action
	var revert []Command
	var ids []string
	for _, c := range cmds {
		if w.isPending(c.ID) {
			acts = append(acts, Action{Kind: ActionToast, Code: ToastDuplicateID, ID: c.ID})
			break
		}
		var inverse []Command
		if w.undo.limited && w.undo.max == 0 {
			// No history: the inverse would be thrown away.
			d, rej := applyLocal(w.Rendered(), c)
			if rej != nil {
				acts = append(acts, Action{Kind: ActionToast, Code: rej.Code, ID: c.ID})
				break
			}
			w.rendered = d
		} else {
			res := Apply(w.Rendered(), c)
			if res.Rejected != nil {
				acts = append(acts, Action{Kind: ActionToast, Code: res.Rejected.Code, ID: c.ID})
				break
			}
			w.rendered, inverse = res.Doc, res.Inverse
		}
		w.pending = append(w.pending, c)
		acts = append(acts, Action{Kind: ActionSend, ID: c.ID})
		revert = append(inverse, revert...)
		ids = append(ids, c.ID)
	}
	if len(revert) > 0 { // create-page has nothing to undo: no entry
		e := undoEntry{ids: ids, cmd: revert}
		if stack == nil {
			stack = &w.undo
		}
		stack.push(e)
	}
	return acts
}

// LimitUndo bounds the window's undo and redo histories to the last n
// steps each (n < 0 counts as 0), dropping the oldest: spec/window.md keeps
// them without bound, which a window issuing commands for hours (a load
// generator's) would hold in memory to the end. With n = 0 the window
// keeps no history at all, builds no inverses, and every undo or redo
// answers nothing-to-undo or nothing-to-redo.
func (w *Window) LimitUndo(n int) {
	n = max(n, 0)
	for _, s := range []*undoStack{&w.undo, &w.redo} {
		s.limited, s.max = true, n
		s.trim()
	}
}

// Echo delivers the server's command number seq of this page.
func (w *Window) Echo(seq int64, c Command) []Action {
	return w.echo(seq, c, nil)
}

// EchoShared is Echo for windows of one page that share their work: when
// prev is this window's server document (the very same Doc, Same, not
// merely equal), next is taken as its document after c instead of
// applying c again. The caller vouches that next is Apply(prev, c).Doc,
// typically the Server of another window of the page after the same echo.
func (w *Window) EchoShared(seq int64, c Command, prev, next Doc) []Action {
	if !w.server.Same(prev) {
		return w.echo(seq, c, nil)
	}
	return w.echo(seq, c, &next)
}

// AdoptServer replaces the server document with d when they are Equal
// (the same page in canonical form), so that the window holds d's very
// value, as another window of the page does, and EchoShared can take
// that window's results; false: they differ, and nothing changes.
func (w *Window) AdoptServer(d Doc) bool {
	if w.server.Same(d) {
		return true
	}
	if !w.server.Equal(d) {
		return false
	}
	w.server = d
	w.rebase()
	return true
}

func (w *Window) echo(seq int64, c Command, next *Doc) []Action {
	switch {
	case seq <= w.seq:
		return nil // duplicate
	case seq > w.seq+1:
		if w.awaiting {
			return nil
		}
		w.awaiting = true
		return []Action{{Kind: ActionRefetch}}
	}
	// A command the server accepted applies here too; if this reducer
	// disagrees, the fold of the log still skips it, as every fold must.
	if next != nil {
		w.server = *next
	} else {
		w.server = applyDoc(w.server, c)
	}
	w.seq = seq
	w.drop(c.ID)
	w.rebase()
	return nil
}

// drop removes id from pending.
func (w *Window) drop(id string) bool {
	delete(w.reverts, id)
	for i, p := range w.pending {
		if p.ID == id {
			w.pending = append(w.pending[:i:i], w.pending[i+1:]...)
			return true
		}
	}
	return false
}

// rebase re-folds pending over the server document (when Rendered is
// next asked for).
func (w *Window) rebase() {
	if len(w.pending) == 0 {
		w.rendered, w.stale = w.server, false
		return
	}
	w.stale = true
}

// Reject delivers the server's rejection of an own command.
func (w *Window) Reject(id, code string) []Action {
	if !w.drop(id) {
		return nil // not ours, or already settled by a snapshot
	}
	w.forget(id)
	w.dropReverting(map[string]bool{id: true})
	w.rebase()
	return []Action{{Kind: ActionToast, Code: code, ID: id}}
}

// Ack delivers the server's answer that own command id was committed at
// seq (kb.command's answer, to a send or a resend). At or below the
// window's seq the command is in the server document already (a snapshot
// read after it brought it, without an outcome when it was posted after
// the snapshot's request left): it leaves pending. Above, it waits for
// its echo. Nothing else changes and no action results.
func (w *Window) Ack(id string, seq int64) []Action {
	if seq < 1 || seq > w.seq || !w.isPending(id) {
		return nil
	}
	w.drop(id)
	w.rebase()
	return nil
}

// forget removes undo and redo entries made from command id.
func (w *Window) forget(id string) {
	w.undo.forget(id)
	w.redo.forget(id)
}

// Snapshot replaces the server document with a fresh read at seq, with the
// outcomes of the pending ids. Committed and rejected ids leave pending
// (rejections are toasted); the others are rebased and sent again with the
// same ids (the server deduplicates). A snapshot older than the window's
// seq is ignored.
func (w *Window) Snapshot(doc Doc, seq int64, outcomes map[string]Outcome) []Action {
	if seq < w.seq {
		return nil
	}
	var acts []Action
	w.server, w.seq, w.awaiting = doc, seq, false
	kept := w.pending[:0:0]
	rejected := map[string]bool{}
	for _, c := range w.pending {
		o, ok := outcomes[c.ID]
		switch {
		case ok && o.Rejected != nil:
			w.forget(c.ID)
			rejected[c.ID] = true
			acts = append(acts, Action{Kind: ActionToast, Code: o.Rejected.Code, ID: c.ID})
		case ok && o.Seq > 0 && o.Seq <= seq:
			// committed and folded into doc
		default:
			kept = append(kept, c)
		}
	}
	w.pending = kept
	w.dropReverting(rejected)
	for _, c := range w.pending {
		acts = append(acts, Action{Kind: ActionSend, ID: c.ID})
	}
	w.rebase()
	return acts
}

// Undo reverts the window's last own accepted command (or redo) by issuing
// its recorded inverse commands as new commands with the given ids, which
// the caller supplies: the window mints nothing.
func (w *Window) Undo(ids []string) []Action {
	return w.step(&w.undo, &w.redo, ids, ToastNothingToUndo)
}

// Reverts returns the ids of the commands that pending undo or redo
// command id reverts (nil for any other id): what a debugger links it to.
func (w *Window) Reverts(id string) []string {
	return append([]string(nil), w.reverts[id]...)
}

// Redo reverts the last undo, with new ids.
func (w *Window) Redo(ids []string) []Action {
	return w.step(&w.redo, &w.undo, ids, ToastNothingToRedo)
}

func (w *Window) step(from, to *undoStack, ids []string, empty string) []Action {
	if len(from.entries) == 0 {
		return []Action{{Kind: ActionToast, Code: empty}}
	}
	e := from.entries[len(from.entries)-1]
	if len(ids) < len(e.cmd) {
		return []Action{{Kind: ActionToast, Code: ToastMissingIDs}}
	}
	// An id already pending (or given twice) would stop the step half way
	// and lose the entry; refuse it up front and keep the entry, as Local
	// changes nothing for a pending id.
	for i, id := range ids[:len(e.cmd)] {
		if w.isPending(id) || contains(ids[:i], id) {
			return []Action{{Kind: ActionToast, Code: ToastDuplicateID}}
		}
	}
	from.pop()
	cmds := make([]Command, len(e.cmd))
	for i, c := range e.cmd {
		cmds[i] = Command{ID: ids[i], Type: c.Type, Payload: c.Payload}
	}
	acts := w.issue(cmds, to)
	for _, c := range cmds {
		if w.isPending(c.ID) {
			if w.reverts == nil {
				w.reverts = map[string][]string{}
			}
			w.reverts[c.ID] = e.ids
		}
	}
	return acts
}

// dropReverting drops, after rejections, every pending undo or redo command
// that reverts a rejected command (and, in turn, what reverts those). The
// transport sends a window's commands one at a time in order, so these were
// not sent yet.
func (w *Window) dropReverting(rejected map[string]bool) {
	for changed := true; changed; {
		changed = false
		kept := w.pending[:0:0]
		for _, c := range w.pending {
			drop := false
			for _, id := range w.reverts[c.ID] {
				if rejected[id] {
					drop = true
				}
			}
			if drop {
				rejected[c.ID] = true
				w.forget(c.ID)
				delete(w.reverts, c.ID)
				changed = true
				continue
			}
			kept = append(kept, c)
		}
		w.pending = kept
	}
}
