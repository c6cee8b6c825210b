package sim

import (
	"fmt"
	"strings"
	"time"
)

// quiesce sends every pending command until decided and delivers every echo,
// without faults, until every window is at its page's head. It is bounded:
// a window that makes no progress within the echo timeout is a protocol
// finding, is refetched once, and is then given up on; the seed's deadline
// bounds the rest.
func (s *sim) quiesce() error {
	if err := s.awaitFailover(); err != nil {
		return err
	}
	s.logf("quiesce")
	for round := 0; round < 200; round++ {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		busy := false
		for _, w := range s.wins {
			for tries := 0; tries < 200; {
				c := s.firstUnacked(w)
				if c == nil {
					break
				}
				if err := s.send(w); err != nil {
					return err
				}
				if err := s.ctx.Err(); err != nil {
					return err
				}
				if c2 := s.firstUnacked(w); c2 != nil && c2.ID == c.ID {
					s.pause(tries) // not decided yet (retryable): back off
					tries++
				}
			}
		}
		s.refreshHeads(s.kitClient())
		for _, w := range s.wins {
			if w.stuck {
				continue
			}
			if err := s.settle(w); err != nil {
				return err
			}
			if len(w.w.Pending()) > 0 || w.w.Seq() < s.known[s.pages[w.page]] {
				busy = busy || !w.stuck
			}
		}
		if !busy {
			return nil
		}
	}
	var stuck []string
	for _, w := range s.wins {
		if n := len(w.w.Pending()); n > 0 || w.w.Seq() < s.known[s.pages[w.page]] {
			stuck = append(stuck, fmt.Sprintf("w%d: seq %d/%d, %d pending", w.idx, w.w.Seq(), s.known[s.pages[w.page]], n))
		}
	}
	if len(stuck) > 0 {
		s.failures = append(s.failures, "quiesce did not settle: "+strings.Join(stuck, "; "))
	}
	return nil
}

// settle brings window w to its page's known head. No progress within the
// echo timeout is a protocol finding, followed by a refetch; if that does
// not bring the window to the head either, w is stuck.
func (s *sim) settle(w *win) error {
	page := s.pages[w.page]
	mark, since := w.w.Seq(), time.Now()
	for w.w.Seq() < s.known[page] {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		if w.w.Seq() > mark {
			mark, since = w.w.Seq(), time.Now()
		}
		if time.Since(since) > s.opts.EchoTimeout {
			s.stall(w, fmt.Sprintf("w%d: no echo after seq %d on page %s within %s (the server's head is at least %d)",
				w.idx, w.w.Seq(), shortID(page), s.opts.EchoTimeout, s.known[page]))
			if err := s.refetch(w); err != nil {
				return err
			}
			if w.w.Seq() < s.known[page] || len(w.w.Pending()) > 0 {
				s.giveUp(w)
			}
			return nil
		}
		if max(w.recv, w.w.Seq()) >= s.known[page] && len(w.inbox) == 0 {
			// Everything was received but something was dropped on the
			// way: the window must notice the gap itself.
			if !w.w.Awaiting() {
				s.logf("w%d stalled at seq %d: resubscribing", w.idx, w.w.Seq())
				s.rec.note(w, "stalled: resubscribing")
				if w.sub != nil {
					w.sub.Close()
				}
				w.sub, w.inbox, w.recv = nil, nil, w.w.Seq()
				continue
			}
			if err := s.refetch(w); err != nil {
				return err
			}
			continue
		}
		before, stalls := w.w.Seq(), s.stats.EchoStalls
		if err := s.deliver(w, true); err != nil {
			return err
		}
		if s.stats.EchoStalls > stalls {
			// No echo within the timeout (a finding) and deliver has
			// refetched: if the window is still behind, give up on it.
			if w.w.Seq() < s.known[page] || len(w.w.Pending()) > 0 {
				s.giveUp(w)
			}
			return nil
		}
		if w.w.Seq() == before && w.w.Awaiting() {
			if err := s.refetch(w); err != nil {
				return err
			}
		}
	}
	return nil
}

// giveUp marks w stuck: quiesce no longer waits for it.
func (s *sim) giveUp(w *win) {
	w.stuck = true
	s.logf("w%d stuck at seq %d/%d: quiesce gives up on it", w.idx, w.w.Seq(), s.known[s.pages[w.page]])
	s.rec.note(w, "stuck: quiesce gives up on it")
}

// stall records that the server owed a window an echo and did not send it
// in time: a protocol finding, and the run starts no further seed (every
// seed would wait as long).
func (s *sim) stall(w *win, finding string) {
	s.stats.EchoStalls++
	s.failures = append(s.failures, finding)
	s.logf("%s", finding)
	s.rec.note(w, "echo timeout: "+finding)
	if s.halt == "" {
		s.halt = "seed " + fmt.Sprint(s.seed) + ": " + finding
	}
}
