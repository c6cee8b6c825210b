package sim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/kbcore"
)

// sendCall is one POST of a window's command: prepared and concluded by
// the scheduler, posted alone or concurrently with others (a burst).
type sendCall struct {
	w    *win
	c    kbcore.Command
	env  kbcore.Envelope
	lose bool
	// forced: the scheduler lost this answer on purpose (race); it
	// refetches at once or sends the command again.
	forced bool
	ack    client.Ack
	rej    *kbcore.Rejection
	err    error
	t0     int64 // when it was posted (ns since the seed began)
}

// send posts window w's first pending command that is not acknowledged.
func (s *sim) send(w *win) error {
	sc := s.prepareSend(w)
	if sc == nil {
		return nil
	}
	sc.ack, sc.rej, sc.err = w.c.Submit(s.ctx, sc.env)
	return s.concludeSend(sc)
}

// burst posts the next command of every window that has one, all at once,
// so that the server sees concurrent commands (and its group commit forms
// groups); the answers are then handled in window order. The server's
// interleaving of a burst is not the seed's to decide.
func (s *sim) burst() error {
	var calls []*sendCall
	for _, w := range s.wins {
		if sc := s.prepareSend(w); sc != nil {
			calls = append(calls, sc)
		}
	}
	s.logf("burst of %d concurrent sends", len(calls))
	var wg sync.WaitGroup
	for _, sc := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc.ack, sc.rej, sc.err = sc.w.c.Submit(s.ctx, sc.env)
		}()
	}
	wg.Wait()
	for _, sc := range calls {
		if err := s.concludeSend(sc); err != nil {
			return err
		}
	}
	return nil
}

func (s *sim) prepareSend(w *win) *sendCall {
	c := s.firstUnacked(w)
	if c == nil {
		return nil
	}
	page := s.pages[w.page]
	if s.ops[c.ID] == nil {
		s.ops[c.ID] = &op{id: c.ID, page: page, cmd: *c, call: time.Since(s.start).Nanoseconds(), win: w.idx}
		s.rec.command(w, s.ops[c.ID])
		s.opOrder = append(s.opOrder, c.ID)
		s.stats.Commands++
		s.types[c.Type]++
	}
	s.ops[c.ID].posts++
	lose := s.chance(s.faults.LoseResponse) // drawn whatever the answer, so the draws replay
	forced := s.forceLose == c.ID
	if forced {
		s.forceLose = ""
	}
	return &sendCall{w: w, c: *c,
		env:    kbcore.Envelope{ID: c.ID, DeviceID: s.devices[w.dev].deviceID, PageID: page, Type: c.Type, Payload: c.Payload},
		lose:   lose || forced,
		forced: forced,
		t0:     s.now(),
	}
}

func (s *sim) concludeSend(sc *sendCall) error {
	w, c, page := sc.w, sc.c, sc.env.PageID
	seq, rej, err := sc.ack.Seq, sc.rej, sc.err
	s.rec.post(sc)
	s.checkAnswer(sc)
	if err == nil && sc.lose {
		s.stats.LostResp++
		if sc.forced {
			s.stats.ForcedLost++
		}
		s.logf("w%d send %s %s: response lost (fault)", w.idx, c.ID[:8], c.Type)
		refetch := s.rng.IntN(2) == 0
		if sc.forced {
			// The race's lost rejection: mostly refetched, a third of
			// the time sent again.
			refetch = s.rng.IntN(3) > 0
		}
		if refetch {
			// A client that lost the answer may refetch before it resends:
			// the outcomes must then report the decision (rejected too).
			s.stats.Refetches++
			return s.refetch(w)
		}
		return nil // the retry must be deduplicated (a rejection answered again)
	}
	switch {
	case err != nil && s.ctx.Err() != nil:
		return s.ctx.Err()
	case err != nil && client.IsRetryable(err):
		s.stats.Retries++
		s.logf("w%d send %s: retryable: %v", w.idx, c.ID[:8], err)
		return nil
	case err != nil:
		s.failures = append(s.failures, fmt.Sprintf("w%d %s %s: %v", w.idx, c.Type, c.ID, err))
		s.logf("w%d send %s: protocol error: %v", w.idx, c.ID[:8], err)
		// Unblock the window: treat it as rejected so the run can finish.
		w.acked[c.ID] = true
		return s.handle(w, w.w.Reject(c.ID, "protocol-error"))
	case rej != nil:
		s.decide(c.ID, 0, rej)
		s.logf("w%d send %s %s: rejected %s", w.idx, c.ID[:8], c.Type, rej.Code)
		return s.handle(w, w.w.Reject(c.ID, rej.Code))
	}
	s.decide(c.ID, seq, nil)
	w.acked[c.ID] = true
	if seq > s.known[page] {
		s.known[page] = seq
	}
	s.logf("w%d send %s %s: seq %d", w.idx, c.ID[:8], c.Type, seq)
	if kbcore.DerivesElsewhere(c.Type) {
		// Derived commands land on other pages: learn their heads.
		s.refreshHeads(w.c)
	}
	return nil
}

func (s *sim) refreshHeads(c *client.Client) {
	for k, page := range s.pages {
		floor := s.known[page]
		snap, err := s.retryPage(c, page, nil)
		if err != nil {
			continue
		}
		s.checkRecency("after a derived command:", page, floor, snap.Seq)
		if snap.Seq > s.known[page] {
			s.known[page] = snap.Seq
		}
		p := snap.Doc.Page()
		s.titles[k] = p.Title
		s.merged[k] = p.MergedInto != ""
	}
}

// nextEvent returns the next event of w's subscription, (re)subscribing as
// needed and waiting at most EchoTimeout.
func (s *sim) nextEvent(w *win) (client.Event, bool, error) {
	if len(w.inbox) > 0 {
		ev := w.inbox[0]
		w.inbox = w.inbox[1:]
		return ev, true, nil
	}
	// The wait for an echo starts when a subscription is up; an instance
	// being restarted may refuse subscriptions for a while (bounded too).
	// Resubscribing backs off, and stops when the seed is cancelled.
	deadline := time.Now().Add(s.opts.EchoTimeout)
	hardStop := time.Now().Add(3 * s.opts.EchoTimeout)
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		if err := s.ctx.Err(); err != nil {
			return client.Event{}, false, err
		}
		if attempt > 0 {
			s.pause(attempt - 1)
		}
		if w.sub == nil {
			sub, err := w.c.Subscribe(s.ctx, s.pages[w.page], w.w.Seq())
			if err != nil {
				if s.ctx.Err() != nil {
					return client.Event{}, false, s.ctx.Err()
				}
				s.logf("w%d subscribe: %v", w.idx, err)
				if d := time.Now().Add(s.opts.EchoTimeout); d.Before(hardStop) {
					deadline = d
				}
				continue
			}
			w.sub, w.recv = sub, w.w.Seq()
			w.subAfter, w.subLast = w.w.Seq(), w.w.Seq()
			if w.subAfter > 0 {
				s.stats.Resumes++
			}
			if d := time.Now().Add(s.opts.EchoTimeout); d.After(deadline) && d.Before(hardStop) {
				deadline = d
			}
		}
		ctx, cancel := context.WithDeadline(s.ctx, deadline)
		ev, err := w.sub.Next(ctx)
		cancel()
		if err != nil {
			if s.ctx.Err() != nil {
				return client.Event{}, false, s.ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) {
				break
			}
			s.logf("w%d subscription ended: %v", w.idx, err)
			w.sub.Close()
			w.sub = nil
			continue
		}
		if !s.checkStream(w, ev) || ev.Seq <= w.recv {
			attempt = -1 // an event came: no back-off before the next read
			continue
		}
		w.recv = ev.Seq
		return ev, true, nil
	}
	return client.Event{}, false, nil
}

// deliver gives window w its next echo, if the server is known to have one,
// with the seed's echo faults.
func (s *sim) deliver(w *win, quiet bool) error {
	page := s.pages[w.page]
	if max(w.recv, w.w.Seq()) >= s.known[page] && len(w.inbox) == 0 {
		return nil
	}
	ev, ok, err := s.nextEvent(w)
	if err != nil {
		return err
	}
	if !ok {
		s.stall(w, fmt.Sprintf("w%d: no echo after seq %d on page %s within %s (the server's head is at least %d)",
			w.idx, w.recv, shortID(page), s.opts.EchoTimeout, s.known[page]))
		// What the stream does not bring, a refetch may.
		if err := s.refetch(w); err != nil {
			return err
		}
		if max(w.recv, w.w.Seq()) < s.known[page] {
			s.known[page] = max(w.recv, w.w.Seq()) // stop waiting for it
		}
		return nil
	}
	if !quiet {
		switch {
		case s.chance(s.faults.Drop):
			s.stats.Dropped++
			w.gapped = true
			s.logf("w%d echo %d dropped (fault)", w.idx, ev.Seq)
			s.rec.fault(w, "echo %d dropped (fault)", ev.Seq)
			return nil
		case s.chance(s.faults.Reorder) && w.recv < s.known[page]:
			next, ok, err := s.nextEvent(w)
			if err == nil && ok {
				s.stats.Reordered++
				s.logf("w%d echoes %d and %d reordered (fault)", w.idx, ev.Seq, next.Seq)
				s.rec.fault(w, "echoes %d and %d reordered (fault)", ev.Seq, next.Seq)
				if err := s.echo(w, next); err != nil {
					return err
				}
			}
		case s.chance(s.faults.Duplicate):
			s.stats.Duplicated++
			s.logf("w%d echo %d duplicated (fault)", w.idx, ev.Seq)
			s.rec.fault(w, "echo %d duplicated (fault)", ev.Seq)
			if err := s.echo(w, ev); err != nil {
				return err
			}
		}
	}
	return s.echo(w, ev)
}

func (s *sim) echo(w *win, ev client.Event) error {
	s.checkEcho(w, ev)
	before := w.w.Seq()
	if ev.Seq > before+1 && !w.w.Awaiting() {
		s.stats.Gaps++
	}
	acts := w.w.Echo(ev.Seq, ev.Cmd)
	s.rec.echo(w, ev, before, acts)
	s.logf("w%d echo %d %s %s (seq %d -> %d) %v", w.idx, ev.Seq, ev.Cmd.Type, shortID(ev.Cmd.ID), before, w.w.Seq(), acts)
	if o := s.ops[ev.Cmd.ID]; o != nil && o.ret == 0 {
		s.decide(ev.Cmd.ID, ev.Seq, nil)
	}
	return s.handle(w, acts)
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// fault injects a connection-level fault.
