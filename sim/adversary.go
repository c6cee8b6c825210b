package sim

import (
	"fmt"
	"time"

	"github.com/subspace/kbkit/target"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/speckit/adapter"
)

// The kit as the other users of a foreign window's page: a kit window on
// the page (Options.Others opens one per client by default) edits
// beside the client at random, and now and then, on a step of the
// client, acts against it through the client's proxy (clientproxy_arms.go),
// so that every checker has something to check in a single-client run:
//
//   - conflict: the client edits a node both show; its post is held at
//     the proxy while the kit deletes the node; released, the server
//     rejects it (node-not-found): a rejection the client's reducer could
//     not foresee (rollback, and the toast).
//   - concurrent insert: the client inserts after a node; its post is
//     held while the kit inserts after the same node; both commit, the
//     kit's first (rendered = fold(server, pending) while it is pending).
//   - concurrent edit: the client edits a node's text; its post is held
//     while the kit gives the node another text; both commit, the kit's
//     first: the client's text must show while it is pending and after
//     (a client that applies others' echoes on top of what it renders
//     shows the kit's).
//   - merge (late in a seed): the client's held edit lands on a page the
//     kit merged meanwhile (page-merged).
//   - rename (a client that declared rename-page): the client's held
//     rename asks for a title the kit gave another page meanwhile
//     (title-taken).
//   - refusal: every post of the client's edit is answered 400
//     BAD_REQUEST by the proxy, never forwarded: final, the client
//     toasts `refused` with its id, drops it from pending and posts it
//     no more (spec/window.md, Refusals).
//
// Once the kit's command reached the client, and while the client's own
// post is still held, the kit asks the client for its state: it must
// have rebased its pending command on the other user's echo; with
// faults that echo is sometimes delivered twice, which it must count
// once, or (a concurrent insert) after the client's own echo, which it
// must not apply before the seq it follows.
//
// With faults, the answer to the client's post is then lost and its
// retries are refused (503; the kit waits for two of them) until it
// calls kb.page, sometimes across a
// restart of its instance: the command stays undecided. Sometimes the
// echo is dropped too (the conflict's delete, or the client's own
// committed edit) and the kit commits once more: the client sees a gap
// and refetches with the undecided id pending, which the server decided
// (outcomes); otherwise its retry gets the decision again (dedup).
// Every choice is drawn from the seed (choices.go) before the client's
// timing matters.

// adversaryWait bounds a wait for the client's post to reach the proxy
// (and its answer to be lost): a client that is slower is not a finding,
// the step just proves less.
const adversaryWait = 3 * time.Second

// Kinds of an adversary step.
const (
	advConflict = iota
	advInsert
	advUndecided
	advMerge
	advRename
	advEdit
	advRefuse
)

// adversary runs one adversary step against fw through kit window a (on
// fw's page). It reports false when it had nothing to act on.
func (s *sim) adversary(fw *foreignWin, a *win) (bool, error) {
	kind := []int{advConflict, advConflict, advEdit, advInsert, advInsert, advUndecided, advUndecided, advMerge}[s.rng.IntN(8)]
	lose, dropEcho, restart, dup, late := false, false, false, false, false
	if s.opts.Faults {
		lose = s.rng.IntN(3) > 0
		dropEcho = lose && s.rng.IntN(2) == 0
		_, canRestart := s.target.(Restarter)
		restart = lose && canRestart && s.faults.RestartInstance && s.rng.OneIn(3)
		// A duplicate (of the kit's echo) in two steps of three, a late
		// echo (of a concurrent insert, instead of the duplicate) in one
		// of two: the seed's own drawn faults leave either out in half
		// the seeds.
		dup = !dropEcho && !s.rng.OneIn(3)
		late = !dropEcho && s.rng.OneIn(2)
	}
	if kind == advUndecided && !lose {
		kind = advConflict
	}
	if kind == advMerge && (s.steps < s.opts.Steps*2/3 || len(s.pages) < 2 || !fw.intents[kbcore.TypeEditText]) {
		kind = advConflict
	}
	if kind == advMerge && s.opts.Faults && !s.rng.OneIn(3) {
		// With faults, one merge draw in three: a merged page leaves the
		// end of the seed no echo probe (echoprobe.go).
		kind = advConflict
	}
	if kind == advConflict && fw.intents[kbcore.TypeRenamePage] && len(s.pages) > 1 && s.rng.OneIn(4) {
		kind = advRename
	}
	if (kind == advConflict && s.rng.OneIn(3)) || (!fw.refused && s.steps >= s.opts.Steps/3) {
		kind = advRefuse // in one conflict of three, and once a seed at least
	}
	var shared []kbcore.Node // nodes the client and the kit window both show
	fw.doc.Walk(func(n kbcore.Node) bool {
		if _, ok := a.w.Rendered().Node(n.ID); ok {
			shared = append(shared, n)
		}
		return true
	})
	if len(shared) == 0 || s.merged[fw.page] {
		return false, nil
	}
	node := shared[s.rng.IntN(min(3, len(shared)))]
	var mine, theirs kbcore.Command // the client's command, the kit's
	var renameOther func() error    // the kit's rename of another page
	switch kind {
	case advConflict, advMerge, advUndecided, advEdit, advRefuse:
		if !fw.intents[kbcore.TypeEditText] {
			return false, nil
		}
		mine = kbcore.Command{ID: s.newID(), Type: kbcore.TypeEditText, Payload: mustJSON(map[string]any{"node": node.ID, "text": node.Text + s.piece()})}
		switch kind {
		case advConflict:
			theirs = kbcore.Command{ID: s.newID(), Type: kbcore.TypeDelete, Payload: mustJSON(map[string]any{"node": node.ID})}
		case advEdit:
			theirs = kbcore.Command{ID: s.newID(), Type: kbcore.TypeEditText, Payload: mustJSON(map[string]any{"node": node.ID, "text": fmt.Sprintf("k%d %s", s.idSeq, s.piece())})}
		case advMerge:
			into := (fw.page + 1 + s.rng.IntN(len(s.pages)-1)) % len(s.pages)
			if s.merged[into] {
				return false, nil
			}
			theirs = kbcore.Command{ID: s.newID(), Type: kbcore.TypeMergePage, Payload: mustJSON(map[string]any{"into": s.pages[into]})}
		}
	case advRename:
		// The kit gives another page the title the client renames its
		// page to, while the client's rename is held: title-taken.
		other := (fw.page + 1 + s.rng.IntN(len(s.pages)-1)) % len(s.pages)
		if s.merged[other] {
			return false, nil
		}
		title := fmt.Sprintf("S%d-%s P%d t%d", s.seed, s.nonce, fw.page, s.idSeq)
		mine = kbcore.Command{ID: s.newID(), Type: kbcore.TypeRenamePage, Payload: mustJSON(map[string]any{"title": title})}
		renameOther = func() error {
			rej, err := s.directCommand(0, s.pages[other], kbcore.TypeRenamePage, map[string]any{"title": title})
			if err != nil {
				return err
			}
			if rej != nil {
				s.logf("adversary: rename of page %s rejected %s", shortID(s.pages[other]), rej.Code)
				return nil
			}
			s.titles[other] = title
			s.refreshHeads(s.kitClient()) // a rename rewrites links on other pages
			return nil
		}
	case advInsert:
		if !fw.intents[kbcore.TypeCreateAfter] {
			return false, nil
		}
		mine = kbcore.Command{ID: s.newID(), Type: kbcore.TypeCreateAfter, Payload: mustJSON(map[string]any{"after": node.ID, "text": fmt.Sprintf("c%d %s", s.idSeq, s.piece())})}
		theirs = kbcore.Command{ID: s.newID(), Type: kbcore.TypeCreateAfter, Payload: mustJSON(map[string]any{"after": node.ID, "text": fmt.Sprintf("k%d %s", s.idSeq, s.piece())})}
	}
	if kind == advRefuse {
		// Every post of the client's edit is answered 400 BAD_REQUEST:
		// refused, final (spec/window.md, Refusals).
		s.logf("w%d adversary (%s) against %s: %s %s refused", a.idx, advName(kind), fw.name(), mine.Type, shortID(mine.ID))
		fw.proxy.armRefuse(mine.ID)
		fw.refused = true
		s.giveIntent(fw, mine)
		return true, nil
	}
	s.logf("w%d adversary (%s) against %s: %s %s held%s", a.idx, advName(kind), fw.name(), mine.Type, shortID(mine.ID), map[bool]string{true: ", answer lost", false: ""}[lose])

	held, release := fw.proxy.armHold(mine.ID)
	defer release()
	var lost, refused <-chan struct{}
	if lose {
		lost = fw.proxy.armLose(mine.ID, true)
		refused = fw.proxy.armRefused(mine.ID, 2)
	}
	if dropEcho {
		if kind == advConflict {
			fw.proxy.armDrop(theirs.ID)
		} else {
			fw.proxy.armDrop(mine.ID)
		}
	}
	var seen <-chan int64 // the kit's echo reached the client
	switch {
	case theirs.ID == "":
	case late && kind == advInsert:
		// Both commit: the kit's echo comes after the client's own.
		fw.proxy.armLate(theirs.ID)
	default:
		seen = fw.proxy.armSeen(theirs.ID)
		if dup {
			fw.proxy.armDup(theirs.ID)
		}
	}
	if !s.giveIntent(fw, mine) {
		return true, nil
	}
	s.wait(held)
	if renameOther != nil {
		if err := renameOther(); err != nil {
			return true, err
		}
	}
	if theirs.ID != "" {
		if err := s.handle(a, a.w.Local(theirs)); err != nil {
			return true, err
		}
		if err := s.flush(a, theirs.ID); err != nil {
			return true, err
		}
		if seen != nil {
			s.lookAfterEcho(fw, seen)
		}
	}
	release()
	if !lose {
		return true, nil
	}
	s.wait(lost)
	// The command stays undecided through two refused retries (or until
	// the client asks kb.page), however fast or slow the client retries.
	s.wait(refused)
	s.drainForeign()
	if restart {
		s.logf("restarting instance %d (adversary: %s's answer lost)", fw.proxy.inst, fw.name())
		s.rec.restart(fw.proxy.inst)
		s.stats.Restarts++
		if err := s.target.(Restarter).RestartInstance(s.ctx, fw.proxy.inst); err != nil {
			return true, fmt.Errorf("%w: restart instance: %v", target.ErrCannotRun, err)
		}
	}
	if dropEcho {
		// One more command on the page: the client sees the hole.
		next := kbcore.Command{ID: s.newID(), Type: kbcore.TypeCreateAfter, Payload: mustJSON(map[string]any{"text": fmt.Sprintf("k%d %s", s.idSeq, s.piece())})}
		if err := s.handle(a, a.w.Local(next)); err != nil {
			return true, err
		}
		if err := s.flush(a, next.ID); err != nil {
			return true, err
		}
	}
	return true, nil
}

// lookAfterEcho asks fw's client for its state once the kit's echo
// (its seq comes on seen) was passed to it, until the client reports
// that seq, a later one or a gap, within adversaryWait: its own post is
// still held, so its command is pending beside another user's echo, and
// the reply shows whether it rebased (rendered = fold(server, pending))
// and counted a duplicated echo once.
func (s *sim) lookAfterEcho(fw *foreignWin, seen <-chan int64) {
	t := time.NewTimer(adversaryWait)
	defer t.Stop()
	var seq int64
	select {
	case seq = <-seen:
	case <-t.C:
		return
	case <-s.ctx.Done():
		return
	}
	for fw.dead == "" {
		st, err := fw.ad.State(s.ctx, fmt.Sprintf("w%d", fw.idx))
		if err != nil {
			s.clientDied(fw, "state", err)
			return
		}
		s.observe(fw, st)
		if st.Seq >= seq || st.Awaiting {
			s.logf("%s looked at after the kit's echo (seq %d): seq %d, %d pending", fw.name(), seq, st.Seq, len(st.Pending))
			return
		}
		select {
		case <-t.C:
			return
		case <-s.ctx.Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func advName(kind int) string {
	return [...]string{"conflict", "concurrent insert", "undecided", "merge", "rename", "concurrent edit", "refusal"}[kind]
}

// giveIntent has the user of fw perform command c; false if the client
// died.
func (s *sim) giveIntent(fw *foreignWin, c kbcore.Command) bool {
	fw.given[c.ID] = c
	req := adapter.IntentRequest{Window: fmt.Sprintf("w%d", fw.idx), Intent: c.Type, ID: c.ID, Payload: c.Payload}
	fw.coverage.Intents[req.Intent]++
	st, err := fw.ad.Intent(s.ctx, req)
	if err != nil {
		s.clientDied(fw, "intent "+req.Intent, err)
		return false
	}
	s.logf("%s intent %s %s %s -> seq %d, %d pending", fw.name(), req.Intent, shortID(req.ID), req.Payload, st.Seq, len(st.Pending))
	s.rec.foreignIntent(fw, req)
	s.observe(fw, st)
	return true
}

// wait waits for ch, at most adversaryWait.
func (s *sim) wait(ch <-chan struct{}) {
	t := time.NewTimer(adversaryWait)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-s.ctx.Done():
	}
}
