package sim

import (
	"fmt"
	"time"

	"github.com/subspace/kbkit/kbcore"
)

// echoOverdue is how long the kit waits, at the end of a seed with
// faults, for a window whose own echo it dropped, with no event after
// it on the page, to resubscribe on its own before its sockets are cut
// (spec/window.md, A missing echo: a bound of the transport's choosing,
// a few seconds). It is a hang detector, far above any transport's
// bound, so that a starved machine is never read as a missing
// resubscription: the probe ends as soon as the client reaches the seq.
const echoOverdue = 30 * time.Second

// echoProbe: the user of fw, settled at its page's head, edits a node
// it shows; the proxy drops the echo of that edit and nothing follows it
// on the page (the kit's windows are quiet, faults are off): only the
// client's own wait for the echo of a command it was answered can see it
// missing. The client must reach the echo's seq within echoOverdue,
// without a cut; one that does not is a resume finding. It reports
// whether it gave the client the edit (then settleForeign settles the
// client again, cutting its sockets as usual).
func (s *sim) echoProbe(fw *foreignWin) bool {
	if fw.dead != "" || !fw.intents[kbcore.TypeEditText] || s.merged[fw.page] {
		return false
	}
	var node kbcore.Node
	fw.doc.Walk(func(n kbcore.Node) bool {
		node = n
		return false
	})
	if node.ID == "" {
		return false
	}
	mine := kbcore.Command{ID: s.newID(), Type: kbcore.TypeEditText, Payload: mustJSON(map[string]any{"node": node.ID, "text": node.Text + s.piece()})}
	seen := fw.proxy.armSeen(mine.ID)
	// Every copy of the echo (an old subscription not yet stopped, a
	// socket being replaced) until the client subscribes again.
	fw.proxy.armDropCopies(mine.ID)
	s.logf("%s echo probe: %s %s, its echo dropped, nothing after it", fw.name(), mine.Type, shortID(mine.ID))
	if !s.giveIntent(fw, mine) {
		return false
	}
	var seq int64
	t := time.NewTimer(s.opts.EchoTimeout)
	defer t.Stop()
	select {
	case seq = <-seen:
	case <-t.C:
		s.logf("%s echo probe: no echo of %s within %s (not posted, or rejected): nothing to check", fw.name(), shortID(mine.ID), s.opts.EchoTimeout)
		return true
	case <-s.ctx.Done():
		return true
	}
	dropped := time.Now()
	s.exercise(CheckResume)
	for {
		st, err := fw.ad.State(s.ctx, fmt.Sprintf("w%d", fw.idx))
		if err != nil {
			s.clientDied(fw, "state", err)
			return true
		}
		s.observe(fw, st)
		if st.Seq >= seq {
			s.logf("%s echo probe: at seq %d after %.1fs", fw.name(), st.Seq, time.Since(dropped).Seconds())
			return true
		}
		if time.Since(dropped) > echoOverdue {
			s.find(CheckResume, "%s never got the echo of its command %s (edit-text, seq %d), dropped with no event after it on the page: %s later it was still at seq %d; a transport whose acknowledged command's echo is overdue resubscribes with lastEventId = the window's seq (spec/window.md, A missing echo)",
				fw.name(), shortID(mine.ID), seq, echoOverdue, st.Seq)
			return true
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-s.ctx.Done():
			return true
		}
	}
}
