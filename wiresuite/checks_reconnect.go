package wiresuite

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/coder/websocket"
)

// backWithin bounds the wait for a restarted server to answer again.
const backWithin = 60 * time.Second

// checkReconnect has the server restarted by the operator's hook
// (Env.Restart) while a subscription is open: the server must say
// reconnect and close with 1001, then, once it is back, a resubscription
// with lastEventId resumes after it with nothing lost or repeated.
func checkReconnect(ctx context.Context, e *Env) error {
	if e.Restart == nil {
		return Skipf("needs --restart-command or --restart-url: how to have the server shut down gracefully and come back on the same URL")
	}
	return onSubscribed(ctx, e, 2, func(p *page, w *WS) error {
		if err := w.events(ctx, 1, p, 1, 3); err != nil {
			return err
		}
		if err := e.Restart(ctx); err != nil {
			return fmt.Errorf("restarting the server: %w", err)
		}
		m, err := w.recv(ctx, `{"id":null,"method":"reconnect"}`)
		if err != nil {
			return step("shutdown", err)
		}
		if m.Method != "reconnect" || string(m.ID) != "null" {
			return w.fail(`{"id":null,"method":"reconnect"}`, excerpt(m.raw, 200), "a shutting-down server tells its WebSockets to reconnect (PROTOCOL.md 5.3)")
		}
		code, err := w.closed(ctx)
		if err != nil {
			return step("shutdown", err)
		}
		if code != websocket.StatusGoingAway {
			return w.fail("close 1001", fmt.Sprintf("close %d", code), "a shutting-down server closes with 1001 (going away)")
		}
		// The hook may return before the old process has gone and the new one
		// listens: what fails for want of a server is tried again, with the
		// same command id (a retry is exactly-once), until it is back.
		for i := 0; i < 2; i++ {
			p.nodes++
			if err := e.commitWhileRestarting(ctx, p, "create-after", p.nodePayload(p.nodes)); err != nil {
				return step(fmt.Sprintf("after the restart: create-after n%d", p.nodes), err)
			}
		}
		var w2 *WS
		err = whileRestarting(ctx, func() error {
			var r *Response
			var err error
			w2, r, err = e.dialWS(ctx, wsHeader, "")
			switch {
			case r != nil && r.Status == http.StatusServiceUnavailable:
				return errNotBack
			case r != nil:
				return r.fail("101 Switching Protocols", fmt.Sprintf("HTTP %d", r.Status), "the WebSocket upgrade was refused")
			case err != nil:
				return err
			}
			if err = w2.subscribe(ctx, 1, "kb.onPage", map[string]any{"page_id": p.id}, strp("3")); err != nil {
				w2.Close()
			}
			return err
		})
		if err != nil {
			return step("resubscribing with lastEventId", err)
		}
		defer w2.Close()
		if err := step(`resubscribed with lastEventId "3": the commands after it, none lost or repeated`, w2.events(ctx, 1, p, 4, 5)); err != nil {
			return err
		}
		if err := e.addNodes(ctx, p, 1); err != nil {
			return err
		}
		if err := step("live after the reconnect", w2.events(ctx, 1, p, 6, 6)); err != nil {
			return err
		}
		return w2.quiet(ctx, "nothing after the last seq")
	})
}

// errNotBack marks an answer of a server still restarting (503).
var errNotBack = errors.New("the server is not back yet")

// whileRestarting runs f until it succeeds or fails with something other
// than an absent server (a transport error, a 503 or a socket that ended),
// for at most backWithin.
func whileRestarting(ctx context.Context, f func() error) error {
	deadline := time.Now().Add(backWithin)
	for {
		err := f()
		var fl *Failure
		retry := err != nil && (!errors.As(err, &fl) || errors.Is(err, errNotBack))
		if !retry {
			return err
		}
		if time.Now().After(deadline) {
			return failf("the server was not back within %s after the restart: %v", backWithin, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// commitWhileRestarting is commit with one command id, sent again while
// the server is not back.
func (e *Env) commitWhileRestarting(ctx context.Context, p *page, typ string, payload any) error {
	id := newID()
	return whileRestarting(ctx, func() error {
		r, err := e.mutate(ctx, "kb.command", e.envelope(p.id, id, typ, payload))
		if err != nil {
			return err
		}
		if r.Status == http.StatusServiceUnavailable {
			return errNotBack
		}
		seq, _, err := seqOf(r)
		if err != nil {
			return err
		}
		if seq != p.seq+1 {
			return r.fail(fmt.Sprintf(`{"seq":%d}`, p.seq+1), excerpt(r.Body, 200),
				"a command of a page with seq %d (no other writer) commits as seq %d, also when sent again after a restart", p.seq, p.seq+1)
		}
		p.record(seq, id, typ, payload)
		return nil
	})
}
