package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/subspace/kbkit/kbcore"
)

// Window is one open page as a client runs it (spec/window.md): a
// kbcore.Window fed by its own kb.onPage subscription on its own WebSocket,
// the transport that the pure window leaves to its caller. It applies
// echoes as they arrive, refetches a snapshot after a gap (resending the
// pending commands the snapshot does not know, with their ids), and
// resubscribes from its seq when a subscription ends.
//
//	w, err := client.OpenWindow(ctx, c, pageID, client.WindowOptions{DeviceID: me.DeviceID})
//	env, code, ok := w.Local(func(doc kbcore.Doc) kbcore.Command { return cmd })
//	seq, rej, err := w.Send(ctx, env) // decided, or err
//	w.Close()
//
// The caller sends the commands Local, Undo and Redo return one at a
// time, in order, as the spec's transport does. It is the editor of
// kbkit's load generator and of its k6 extension.
type Window struct {
	c      *Client
	page   string
	device string
	obs    WindowObserver
	opts   WindowOptions

	share *pageShare // the page's share in this process (share.go)

	mu  sync.Mutex
	w   *kbcore.Window
	sub *Subscription
	// envs are the envelopes of pending commands, to resend after a
	// snapshot; sending is the one the caller is posting.
	envs    map[string]kbcore.Envelope
	sending string
	closing bool
	// adoptLeft is how many more times the window tries to adopt the
	// server document another window of the page applied an echo to
	// (when its own is equal but not the same value, as after a
	// snapshot): from then on their echoes are applied once for both.
	adoptLeft int
	// apart: the window's server document may be a value no other window
	// of the page holds (it opened or refetched on its own snapshot, or
	// applied an event alone); false once it takes another's.
	apart bool

	// owed is the highest seq the server acknowledged a command of this
	// window at; watching: a timer checks, EchoWait after it was armed,
	// that the window reached the owed seq it was armed for (one timer a
	// window, not one a command).
	owed     int64
	watching bool
	// dropEvent, when set (tests), loses the events it returns true for,
	// as a stream that lost one would: see EchoWait.
	dropEvent func(Event) bool
	// beforePage, when set (tests), runs in a refetch once its kb.page
	// request has its ids and before it is sent, on the reader goroutine.
	beforePage func()

	changed chan struct{} // a token after every applied event or settled command
	done    chan struct{} // the reader goroutine ended
	ctx     context.Context
	cancel  context.CancelFunc
}

// WindowObserver sees what a Window does, for metrics. Its methods run on
// the window's reader goroutine or the caller's, must be safe for
// concurrent use, and must not call back into the window.
type WindowObserver interface {
	// Subscribed: a subscription opened (reconnect: after one ended).
	Subscribed(reconnect bool)
	// Snapshot: the window took the server's document at seq (refetch:
	// after a gap, not at open).
	Snapshot(seq int64, refetch bool)
	// Event: an event arrived at at; applied is false for a duplicate or
	// an event past a gap.
	Event(ev Event, applied bool, at time.Time)
	// Retry: an undecided command is sent again with the same id.
	Retry()
	// Error: something failed: subscribe, subscription-ended, refetch.
	Error(kind string)
	// Attempt: one kb.command call of a command ended (Send's, or a
	// refetch's resend), with its times and answer.
	Attempt(a Attempt)
	// Rejected: a refetch found a pending command rejected (the snapshot's
	// outcome, or the answer to its resend), and the window rolled it
	// back. Send's own rejections are its answer, not reported here.
	Rejected(id, code string)
}

// Attempt is one kb.command call of a window's command (spec/window.md:
// an undecided command is sent again with the same id until it is
// decided). Exactly one of Ack (committed), Rej and Err is meaningful.
type Attempt struct {
	Env      kbcore.Envelope
	From, To time.Time
	Ack      Ack
	Rej      *kbcore.Rejection
	Err      error
	// Abandoned: the caller's context ended during the call, so the
	// caller gave up on the command: the error is not the server's.
	Abandoned bool
	// Resend: a refetch sent it again (the snapshot did not know it).
	Resend bool
}

// Committed reports whether the server answered the attempt committed.
func (a Attempt) Committed() bool { return a.Err == nil && a.Rej == nil }

// NopObserver observes nothing; embed it to implement a few methods.
type NopObserver struct{}

func (NopObserver) Subscribed(bool)              {}
func (NopObserver) Snapshot(int64, bool)         {}
func (NopObserver) Event(Event, bool, time.Time) {}
func (NopObserver) Retry()                       {}
func (NopObserver) Error(string)                 {}
func (NopObserver) Attempt(Attempt)              {}
func (NopObserver) Rejected(string, string)      {}

// WindowOptions configure OpenWindow.
type WindowOptions struct {
	// DeviceID goes into the envelopes; empty: ask kb.whoami.
	DeviceID string
	// WaitForPage is how long to wait for a page that does not exist yet
	// (NOT_FOUND), e.g. one another machine of a run is creating.
	WaitForPage time.Duration
	// Observer, if set, sees subscriptions, snapshots, events, retries,
	// attempts and errors.
	Observer WindowObserver
	// AttemptTimeout, if positive, bounds each kb.command call of Send: a
	// call past it is undecided, and the command is sent again with the
	// same id.
	AttemptTimeout time.Duration
	// Backoff, if set, is the pause before retry attempt n (0-based) of an
	// undecided command, a subscription or a refetch; nil: Pause's.
	Backoff func(attempt int) time.Duration
	// CommandsOnSocket sends Send's commands as kb.command mutations on
	// the window's WebSocket (spec/PROTOCOL.md section 5.1), as tRPC's
	// WebSocket link does, instead of HTTP POSTs: one connection and
	// one message less per command. A command whose socket ends before
	// its answer is undecided and sent again: on the next socket, or
	// over HTTP while there is none (a resubscription, a closed window).
	// Resends after a refetch go over HTTP too: they are made on the
	// socket's reader, which must stay free to read their answers.
	CommandsOnSocket bool
	// EchoWait bounds the wait for the echo of a command the server
	// acknowledged above the window's seq: if the window's seq is still
	// below the command's seq that long after the answer (or up to twice
	// that: one timer watches a window's acknowledged seqs), the event was
	// lost (a live subscription has none missing, spec/PROTOCOL.md 4.4)
	// and the window resubscribes after its seq (spec/window.md). 0: 5 s.
	EchoWait time.Duration
	// UndoDepth bounds the window's undo and redo histories
	// (kbcore.Window.LimitUndo): 0 keeps them without bound, as
	// spec/window.md; n > 0 keeps the last n steps each; NoUndoHistory
	// keeps none (a window that never undoes, such as a load generator's
	// editor issuing commands for hours, which would otherwise hold every
	// command's inverse to the end).
	UndoDepth int
}

// NoUndoHistory is WindowOptions.UndoDepth for a window that keeps no
// undo history.
const NoUndoHistory = -1

// newState is the window's state machine at doc and seq, its undo
// history bounded as the options say.
func (o WindowOptions) newState(doc kbcore.Doc, seq int64) *kbcore.Window {
	w := kbcore.NewWindow(doc, seq)
	switch {
	case o.UndoDepth > 0:
		w.LimitUndo(o.UndoDepth)
	case o.UndoDepth < 0:
		w.LimitUndo(0)
	}
	return w
}

// ErrNotPending is Send's answer for a command the window no longer has
// pending (a snapshot settled it, or a rejection dropped the undo that
// reverted it): it must not be sent.
var ErrNotPending = errors.New("client: the command is not pending in the window")

// OpenWindow opens pageID as a client does: a kb.page snapshot, then the
// subscription from its seq, retrying what the server did not decide.
func OpenWindow(ctx context.Context, c *Client, pageID string, o WindowOptions) (*Window, error) {
	if o.Observer == nil {
		o.Observer = NopObserver{}
	}
	if o.DeviceID == "" {
		var me Device
		if err := Retry(ctx, 20, func() error { var err error; me, err = c.Whoami(ctx); return err }); err != nil {
			return nil, fmt.Errorf("kb.whoami: %w", err)
		}
		o.DeviceID = me.DeviceID
	}
	var snap Snapshot
	start := time.Now()
	for attempt := 0; ; attempt++ {
		var err error
		if snap, err = c.Page(ctx, pageID, nil); err == nil {
			break
		}
		// Undecided answers are retried for up to a minute, a page not
		// there yet for up to WaitForPage.
		var ce *Error
		notYet := errors.As(err, &ce) && ce.Code == "NOT_FOUND" && time.Since(start) < o.WaitForPage
		retry := IsRetryable(err) && time.Since(start) < max(time.Minute, o.WaitForPage)
		if !(notYet || retry) || ctx.Err() != nil {
			return nil, fmt.Errorf("open page %s: %w", pageID, err)
		}
		Pause(ctx, attempt)
	}
	share := sharePage(pageID)
	doc := share.snapshot(snap.Seq, snap.RawDoc, snap.Doc)
	w := &Window{c: c, page: pageID, device: o.DeviceID, obs: o.Observer, opts: o, share: share,
		w: o.newState(doc, snap.Seq), envs: map[string]kbcore.Envelope{}, adoptLeft: adoptTries, apart: true,
		changed: make(chan struct{}, 1), done: make(chan struct{})}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.obs.Snapshot(snap.Seq, false)
	sub, err := w.subscribe(ctx, 40)
	if err != nil {
		w.cancel()
		releasePage(pageID, share)
		return nil, fmt.Errorf("subscribe to page %s: %w", pageID, err)
	}
	w.sub = sub
	w.obs.Subscribed(false)
	go w.read()
	return w, nil
}

// PageID is the page the window shows.
func (w *Window) PageID() string { return w.page }

// DeviceID is the device its commands are sent as.
func (w *Window) DeviceID() string { return w.device }

// Seq is the seq of the last event applied.
func (w *Window) Seq() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Seq()
}

// Rendered is what the user sees: the server document with the pending
// commands folded in.
func (w *Window) Rendered() kbcore.Doc {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Rendered()
}

// Server is the server's document as of Seq, and Seq (a Doc is
// immutable: safe to keep).
func (w *Window) Server() (kbcore.Doc, int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Server(), w.w.Seq()
}

// Converged reports whether the window has applied every command up to
// head and has nothing pending nor awaited.
func (w *Window) Converged(head int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Seq() >= head && len(w.w.Pending()) == 0 && !w.w.Awaiting()
}

// Changed receives a token after the window applied an event or settled
// a command (it holds at most one: check the state after receiving).
func (w *Window) Changed() <-chan struct{} { return w.changed }

func (w *Window) notify() {
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// Local applies a command the user made: build draws it from the rendered
// document, under the window's lock, so that no event lands between the
// reading and the applying. Accepted (ok): its envelope must be sent with
// Send. Refused by the window: code says why (the reducer's rejection code,
// or duplicate-id).
func (w *Window) Local(build func(rendered kbcore.Doc) kbcore.Command) (env kbcore.Envelope, code string, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	cmd := build(w.w.Rendered())
	envs, code := w.issued(w.w.Local(cmd), []kbcore.Command{cmd})
	if len(envs) == 0 {
		return kbcore.Envelope{}, code, false
	}
	return envs[0], "", true
}

// Undo reverts the window's last own step with new commands of the given
// ids (one per command of the step; the window mints nothing). It returns
// the envelopes to send, in order, and a toast code when the window
// issued nothing or stopped at a command the reducer refused.
func (w *Window) Undo(ids []string) ([]kbcore.Envelope, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	before := w.w.Pending()
	return w.issued(w.w.Undo(ids), nil, before...)
}

// Redo reverts the last undo, as Undo.
func (w *Window) Redo(ids []string) ([]kbcore.Envelope, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	before := w.w.Pending()
	return w.issued(w.w.Redo(ids), nil, before...)
}

// issued turns the window's actions into envelopes of the newly pending
// commands (from cmds, or found among the pending commands not in
// before); the first toast is the code. Called with w.mu held.
func (w *Window) issued(acts []kbcore.Action, cmds []kbcore.Command, before ...kbcore.Command) ([]kbcore.Envelope, string) {
	if cmds == nil {
		old := map[string]bool{}
		for _, c := range before {
			old[c.ID] = true
		}
		for _, c := range w.w.Pending() {
			if !old[c.ID] {
				cmds = append(cmds, c)
			}
		}
	}
	var envs []kbcore.Envelope
	code := ""
	for _, a := range acts {
		switch a.Kind {
		case kbcore.ActionSend:
			var c kbcore.Command
			ok := false
			for _, x := range cmds { // one command, or an undo step's few
				if x.ID == a.ID {
					c, ok = x, true
				}
			}
			if !ok {
				continue
			}
			env := kbcore.Envelope{ID: c.ID, DeviceID: w.device, PageID: w.page, Type: c.Type, Payload: c.Payload}
			w.envs[c.ID] = env
			envs = append(envs, env)
		case kbcore.ActionToast:
			if code == "" {
				code = a.Code
			}
		}
	}
	if len(envs) > 0 {
		w.sending = envs[0].ID // the caller posts it next: a refetch must not
	}
	return envs, code
}

// pause waits before retry attempt (0-based), as Backoff says.
func (w *Window) pause(ctx context.Context, attempt int) {
	if w.opts.Backoff == nil {
		Pause(ctx, attempt)
		return
	}
	Sleep(ctx, w.opts.Backoff(attempt))
}

// retry is Retry with the window's pauses; tries <= 0: until ctx ends or
// fn fails for good.
func (w *Window) retry(ctx context.Context, tries int, fn func() error) error {
	var err error
	for attempt := 0; tries <= 0 || attempt < tries; attempt++ {
		if err = fn(); err == nil || !IsRetryable(err) || ctx.Err() != nil {
			return err
		}
		w.pause(ctx, attempt)
	}
	return err
}

// Reopen replaces the window by a new one at the same server document and
// seq, as a client reopening its page does: the undo history (kept
// without bound unless WindowOptions.UndoDepth says otherwise) starts
// afresh. It does so only when
// nothing is pending nor awaited, and reports whether it did.
func (w *Window) Reopen() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.w.Pending()) > 0 || w.w.Awaiting() || w.sending != "" {
		return false
	}
	w.w = w.opts.newState(w.w.Server(), w.w.Seq())
	return true
}

// Pending lists the ids of the commands the window holds pending (issued,
// not yet applied by an echo nor settled), in order, and whether it waits
// for a snapshot after a gap.
func (w *Window) Pending() (ids []string, awaiting bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.w.Pending() {
		ids = append(ids, c.ID)
	}
	return ids, w.w.Awaiting()
}

// Close ends the window's subscription and waits for its reader.
func (w *Window) Close() {
	w.mu.Lock()
	if w.closing {
		w.mu.Unlock()
		<-w.done
		return
	}
	w.closing = true
	sub := w.sub
	w.mu.Unlock()
	w.cancel()
	sub.Close()
	<-w.done
}

// subscribe subscribes from the window's seq, trying at most tries times
// (<= 0: until ctx ends or the server refuses for good).
func (w *Window) subscribe(ctx context.Context, tries int) (*Subscription, error) {
	var sub *Subscription
	deliver := func(ev Event) bool { w.echo(ev); return true }
	err := w.retry(ctx, tries, func() error {
		var err error
		sub, err = w.c.subscribe(ctx, w.page, w.Seq(), deliver)
		if err != nil {
			w.obs.Error("subscribe")
		}
		return err
	})
	return sub, err
}

// read applies the window's events until Close, resubscribing from the
// window's seq when a subscription ends, for as long as the window is open
// and the server's refusals are transient (an outage of any length).
func (w *Window) read() {
	defer close(w.done)
	defer releasePage(w.page, w.share)
	for {
		w.mu.Lock()
		sub := w.sub
		w.mu.Unlock()
		<-sub.done // its reader applied the events (deliver)
		w.mu.Lock()
		closing := w.closing
		w.mu.Unlock()
		if closing {
			return
		}
		if err := sub.Err(); err != nil && !errors.Is(err, ErrReconnect) {
			w.obs.Error("subscription-ended")
		}
		sub.Close()
		next, err := w.subscribe(w.ctx, 0)
		if err != nil {
			return
		}
		w.mu.Lock()
		if w.closing {
			w.mu.Unlock()
			next.Close()
			return
		}
		w.sub = next
		w.mu.Unlock()
		w.obs.Subscribed(true)
	}
}

// adoptTries bounds the attempts to adopt another window's document
// (each compares the documents) after the window's own came apart.
const adoptTries = 4

// docComparisonsInStep counts those attempts by windows that were not
// apart: a window in step with the page's others never needs one (the
// tests check).
var docComparisonsInStep atomic.Int64

func (w *Window) echo(ev Event) {
	now := time.Now()
	w.mu.Lock()
	if w.dropEvent != nil && w.dropEvent(ev) {
		w.mu.Unlock()
		return
	}
	before := w.w.Seq()
	var acts []kbcore.Action
	if sh := ev.shared; sh != nil && ev.Seq == before+1 && !w.w.Awaiting() {
		// The page's windows in this process apply the event once: the
		// first records its documents, the others take them.
		p, n, ok := sh.apply(func() (kbcore.Doc, kbcore.Doc, bool) {
			prev := w.w.Server()
			acts = w.w.Echo(ev.Seq, ev.Cmd)
			w.apart = w.apart || sh.private
			return prev, w.w.Server(), w.w.Seq() == ev.Seq
		})
		if ok {
			acts = w.w.EchoShared(ev.Seq, ev.Cmd, p, n)
			if w.w.Server().Same(n) {
				w.apart = false
			} else if w.adoptLeft > 0 {
				if !w.apart {
					docComparisonsInStep.Add(1)
				}
				if w.w.AdoptServer(n) {
					w.adoptLeft, w.apart = adoptTries, false
				} else {
					w.adoptLeft--
				}
			}
		}
	} else {
		acts = w.w.Echo(ev.Seq, ev.Cmd)
		w.apart = true
	}
	applied := w.w.Seq() > before
	if applied && len(w.envs) > 0 { // most echoes are of other windows' commands
		delete(w.envs, ev.Cmd.ID)
	}
	w.mu.Unlock()
	w.obs.Event(ev, applied, now)
	for _, a := range acts {
		if a.Kind == kbcore.ActionRefetch {
			w.refetch()
		}
	}
	w.notify()
}

// refetch replaces the window's server document after a gap and resends
// the pending commands the snapshot does not know (same ids). It tries
// for as long as the window is open and the failures are transient: the
// window waits for the snapshot, and applies nothing until it has it.
func (w *Window) refetch() {
	ctx := w.ctx
	w.mu.Lock()
	var ids []string
	for _, c := range w.w.Pending() {
		ids = append(ids, c.ID)
	}
	before := w.beforePage
	w.mu.Unlock()
	if before != nil {
		before()
	}
	var snap Snapshot
	err := w.retry(ctx, 0, func() error { var err error; snap, err = w.c.Page(ctx, w.page, ids); return err })
	if err != nil {
		w.obs.Error("refetch")
		return
	}
	doc := w.share.snapshot(snap.Seq, snap.RawDoc, snap.Doc)
	w.mu.Lock()
	var rejected []string // id, code, ...: pending commands the snapshot says were rejected
	if snap.Seq >= w.w.Seq() {
		for _, c := range w.w.Pending() {
			if o, ok := snap.Outcomes[c.ID]; ok && o.Rejected != nil {
				rejected = append(rejected, c.ID, o.Rejected.Code)
				delete(w.envs, c.ID)
			}
		}
	}
	acts := w.w.Snapshot(doc, snap.Seq, snap.Outcomes)
	w.adoptLeft, w.apart = adoptTries, true // a document of its own again
	var resend []kbcore.Envelope
	for _, a := range acts {
		if env, ok := w.envs[a.ID]; ok && a.Kind == kbcore.ActionSend && a.ID != w.sending {
			resend = append(resend, env)
		}
	}
	w.mu.Unlock()
	w.obs.Snapshot(snap.Seq, true)
	for i := 0; i < len(rejected); i += 2 {
		w.obs.Rejected(rejected[i], rejected[i+1])
	}
	for _, env := range resend {
		w.obs.Retry()
		ack, rej, err := w.attempt(ctx, env, true)
		if err != nil && !Refused(err) {
			continue // undecided: the caller's Send, or the next refetch, sends it again
		}
		w.mu.Lock()
		settled := w.answered(env.ID, ack.Seq, rej, err)
		w.mu.Unlock()
		if rej != nil {
			w.obs.Rejected(env.ID, rej.Code)
		} else if err != nil {
			w.obs.Rejected(env.ID, CodeRefused)
		}
		if settled {
			w.notify()
		}
	}
}

// Pause waits before retry attempt (0-based): 25 ms more per attempt, at
// most half a second, or until ctx ends.
func Pause(ctx context.Context, attempt int) {
	Sleep(ctx, time.Duration(min(attempt+1, 20))*25*time.Millisecond)
}

// Doubling is a Backoff for WindowOptions: first, doubling per attempt up
// to most.
func Doubling(first, most time.Duration) func(attempt int) time.Duration {
	return func(attempt int) time.Duration {
		d := first
		for i := 0; i < attempt && d < most; i++ {
			d *= 2
		}
		return min(d, most)
	}
}

// Sleep waits d, or until ctx ends.
func Sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// Retry calls fn until it succeeds, fails for good (an error that is not
// IsRetryable), ctx ends or tries run out, pausing between attempts.
func Retry(ctx context.Context, tries int, fn func() error) error {
	var err error
	for attempt := 0; attempt < tries; attempt++ {
		if err = fn(); err == nil || !IsRetryable(err) || ctx.Err() != nil {
			return err
		}
		Pause(ctx, attempt)
	}
	return err
}
