package sim

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/subspace/kbkit/target"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/kbcore"
)

func (s *sim) setup() error {
	tokens, err := s.target.Devices(s.ctx, s.opts.Devices)
	if err != nil {
		return err
	}
	eps := s.target.Endpoints()
	if len(eps) == 0 {
		return fmt.Errorf("%w: target has no endpoint", target.ErrCannotRun)
	}
	for _, tok := range tokens {
		d := deviceInfo{token: tok}
		for _, ep := range eps {
			d.clients = append(d.clients, client.New(ep, tok))
		}
		var me client.Device
		for attempt := 0; ; attempt++ {
			if me, err = d.clients[0].Whoami(s.ctx); err == nil || !client.IsRetryable(err) || attempt > 80 || s.ctx.Err() != nil {
				break
			}
			s.pause(attempt)
		}
		if err != nil {
			return fmt.Errorf("%w: whoami: %v", target.ErrCannotRun, err)
		}
		d.deviceID = me.DeviceID
		s.devices = append(s.devices, d)
	}
	for k := 0; k < s.opts.Pages; k++ {
		page := s.newID()
		title := fmt.Sprintf("S%d-%s P%d", s.seed, s.nonce, k)
		s.pages = append(s.pages, page)
		s.titles = append(s.titles, title)
		s.merged = append(s.merged, false)
		if err := s.direct(0, page, kbcore.TypeCreatePage, map[string]any{"title": title}); err != nil {
			return err
		}
		for j := 0; j < 3; j++ {
			if err := s.direct(0, page, kbcore.TypeCreateAfter, map[string]any{"text": fmt.Sprintf("seed %d", j)}); err != nil {
				return err
			}
		}
	}
	for i := 0; i < s.opts.Windows; i++ {
		if err := s.openWindow(i % len(s.pages)); err != nil {
			return err
		}
	}
	// The other users of each client's page (adversary.go), after the
	// kit's own windows.
	for k := range s.opts.Clients {
		for range s.opts.others() {
			if err := s.openWindow(k % len(s.pages)); err != nil {
				return err
			}
		}
	}
	s.logf("setup: %d devices, %d pages, %d windows, faults: %s", len(s.devices), len(s.pages), len(s.wins), s.faults)
	s.startRecording()
	return nil
}

// openWindow opens the next kit window, on page k.
func (s *sim) openWindow(k int) error {
	eps := s.target.Endpoints()
	i := len(s.wins)
	w := &win{idx: i, page: k, dev: i % len(s.devices), acked: map[string]bool{}}
	w.c = s.devices[w.dev].clients[i%len(eps)]
	snap, err := s.retryPage(w.c, s.pages[w.page], nil)
	if err != nil {
		return fmt.Errorf("%w: open window %d: %v", target.ErrCannotRun, i, err)
	}
	w.w = kbcore.NewWindow(snap.Doc, snap.Seq)
	w.recv = snap.Seq
	s.wins = append(s.wins, w)
	return nil
}

// direct sends a setup command outside any window, retrying until decided.
func (s *sim) direct(dev int, page, typ string, payload any) error {
	rej, err := s.directCommand(dev, page, typ, payload)
	if err == nil && rej != nil {
		return fmt.Errorf("%w: setup %s rejected: %s", target.ErrCannotRun, typ, rej.Message)
	}
	return err
}

// directCommand sends a command outside any window, retrying until
// decided; a rejection is its answer, not an error.
func (s *sim) directCommand(dev int, page, typ string, payload any) (*kbcore.Rejection, error) {
	b, _ := json.Marshal(payload)
	env := kbcore.Envelope{ID: s.newID(), DeviceID: s.devices[dev].deviceID, PageID: page, Type: typ, Payload: b}
	s.setupIDs = append(s.setupIDs, env.ID)
	s.types[typ]++
	for attempt := 0; ; attempt++ {
		seq, rej, err := s.devices[dev].clients[0].Command(s.ctx, env)
		switch {
		case err == nil && rej == nil:
			if seq > s.known[page] {
				s.known[page] = seq
			}
			return nil, nil
		case err == nil:
			return rej, nil
		case !client.IsRetryable(err) || attempt > 50 || s.ctx.Err() != nil:
			return nil, fmt.Errorf("%w: setup %s: %v", target.ErrCannotRun, typ, err)
		}
		s.pause(attempt)
	}
}

func (s *sim) pause(attempt int) {
	d := time.Duration(min(attempt+1, 20)) * 25 * time.Millisecond
	select {
	case <-time.After(d):
	case <-s.ctx.Done():
	}
}

func (s *sim) retryPage(c *client.Client, page string, pending []string) (client.Snapshot, error) {
	for attempt := 0; ; attempt++ {
		snap, err := c.Page(s.ctx, page, pending)
		if err == nil || !client.IsRetryable(err) || attempt > 80 || s.ctx.Err() != nil {
			return snap, err
		}
		if attempt%10 == 0 {
			s.logf("kb.page %s: retrying: %v", shortID(page), err)
		}
		s.stats.Retries++
		s.pause(attempt)
	}
}
