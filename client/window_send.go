package client

import (
	"context"
	"errors"
	"time"

	"github.com/subspace/kbkit/kbcore"
)

// The window's own commands on the wire: sending and resending them,
// settling them by the server's answers, and the timer for their echoes
// (spec/window.md, the transport).

// Send posts a command the window issued until the server decides it,
// resending with the same id while it does not (5xx, 408, 429, network),
// and settles the window (spec/window.md): a commit is an ack (the command
// leaves pending at once if a snapshot brought it, else with its echo); a
// rejection (rej set, err nil) rolls it back; a refusal (another 4xx) is
// a rejection with code refused; an error (not decided within ctx) rolls
// it back too, so that the window does not wait for it.
func (w *Window) Send(ctx context.Context, env kbcore.Envelope) (seq int64, rej *kbcore.Rejection, err error) {
	w.mu.Lock()
	if _, ok := w.envs[env.ID]; !ok {
		w.mu.Unlock()
		return 0, nil, ErrNotPending
	}
	w.sending = env.ID
	w.mu.Unlock()
	for attempt := 0; ; attempt++ {
		var ack Ack
		ack, rej, err = w.attempt(ctx, env, false)
		seq = ack.Seq
		if err == nil || !IsRetryable(err) || ctx.Err() != nil {
			break
		}
		w.pause(ctx, attempt)
		if ctx.Err() != nil {
			break // the caller gave up during the pause
		}
		w.obs.Retry()
	}
	w.mu.Lock()
	if w.sending == env.ID {
		w.sending = ""
	}
	settled := w.answered(env.ID, seq, rej, err)
	w.mu.Unlock()
	if settled {
		w.notify()
	}
	return seq, rej, err
}

// CodeRefused is the rejection code a window settles a command with when
// the server refused its envelope (a 4xx other than 408, 409 and 429:
// final, nothing logged; spec/window.md).
const CodeRefused = "refused"

// Refused reports whether err is such a refusal.
func Refused(err error) bool {
	var e *Error
	return errors.As(err, &e) && !IsRetryable(err) && e.HTTPStatus >= 400 && e.HTTPStatus < 500
}

// answered settles command id in the window after the last answer to a
// send or a resend: an ack; a rejection; a refusal; any other error is
// the caller giving up (Send's context ended), and the command is rolled
// back too. It reports whether the command left pending. Called with
// w.mu held.
func (w *Window) answered(id string, seq int64, rej *kbcore.Rejection, err error) bool {
	code := ""
	switch {
	case err == nil && rej != nil:
		code = rej.Code
	case err != nil && Refused(err):
		code = CodeRefused
	case err != nil:
		code = "error"
	}
	if code != "" {
		w.w.Reject(id, code)
		delete(w.envs, id)
		return true
	}
	w.w.Ack(id, seq)
	if _, pending := w.envs[id]; pending && !w.isPending(id) {
		delete(w.envs, id)
		return true
	}
	w.owed = max(w.owed, seq)
	w.watchEchoes()
	return false
}

// watchEchoes arms the window's echo timer for the owed seq, unless it is
// armed or nothing is owed. Called with w.mu held.
func (w *Window) watchEchoes() {
	if w.watching || w.closing || w.owed <= w.w.Seq() {
		return
	}
	wait := w.opts.EchoWait
	if wait <= 0 {
		wait = 5 * time.Second
	}
	w.watching = true
	owed := w.owed
	time.AfterFunc(wait, func() { w.echoOverdue(owed) })
}

func (w *Window) isPending(id string) bool {
	for _, c := range w.w.Pending() {
		if c.ID == id {
			return true
		}
	}
	return false
}

// echoOverdue resubscribes after the window's seq if it is still below
// seq, the seq of an acknowledged command EchoWait ago: its echo was lost.
// Else it watches for the seqs acknowledged since.
func (w *Window) echoOverdue(seq int64) {
	w.mu.Lock()
	w.watching = false
	if w.closing || w.w.Seq() >= seq {
		w.watchEchoes()
		w.mu.Unlock()
		return
	}
	sub := w.sub
	w.mu.Unlock()
	sub.Close() // the reader resubscribes after the window's seq
	w.mu.Lock()
	w.watchEchoes() // the resubscription must bring them: watch again
	w.mu.Unlock()
}

// attempt makes one kb.command call of env (bounded by AttemptTimeout)
// and reports it to the observer.
func (w *Window) attempt(ctx context.Context, env kbcore.Envelope, resend bool) (Ack, *kbcore.Rejection, error) {
	actx := ctx
	if w.opts.AttemptTimeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, w.opts.AttemptTimeout)
		defer cancel()
	}
	a := Attempt{Env: env, From: time.Now(), Resend: resend}
	w.mu.Lock()
	sub := w.sub
	w.mu.Unlock()
	if w.opts.CommandsOnSocket && !resend && sub.open() {
		a.Ack, a.Rej, a.Err = w.c.SubmitOn(actx, sub, env)
	} else {
		a.Ack, a.Rej, a.Err = w.c.Submit(actx, env)
	}
	a.To = time.Now()
	a.Abandoned = a.Err != nil && ctx.Err() != nil
	w.obs.Attempt(a)
	return a.Ack, a.Rej, a.Err
}
