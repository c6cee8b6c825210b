package editor

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/loadgen/metrics"
)

// Window is one measured window: a client.Window on a page of the
// session, its commands measured into its recorder and tap.
type Window struct {
	s    *Session
	pg   *Page
	cw   *client.Window
	rec  *metrics.Recorder
	tap  Tap
	data any
	// workload is what drew the window's last command.
	workload atomic.Pointer[string]
	closed   atomic.Bool
}

// Options configure Session.Open.
type Options struct {
	// DeviceID is the device the commands are sent as; empty: kb.whoami.
	DeviceID string
	// WaitForPage is how long to wait for a page not created yet.
	WaitForPage time.Duration
	// Recorder records the window's measurements (nil: none).
	Recorder *metrics.Recorder
	// Tap, if set, receives the window's samples as well.
	Tap Tap
	// Workload names the window's samples until its first command.
	Workload string
	// Data is the driver's own, for Data (e.g. the JS object of the
	// window, for the tags of its samples).
	Data any
	// CommandsOnSocket sends the commands on the window's WebSocket
	// (client.WindowOptions).
	CommandsOnSocket bool
	// UndoDepth bounds the window's undo history
	// (client.WindowOptions.UndoDepth; 0: without bound).
	UndoDepth int
}

// Open opens page pageID as a client does (client.OpenWindow) and
// measures it. A failure records an error of kind open.
func (s *Session) Open(ctx context.Context, c *client.Client, pageID string, o Options) (*Window, error) {
	w := &Window{s: s, pg: s.Page(pageID), rec: o.Recorder, tap: o.Tap, data: o.Data}
	w.workload.Store(&o.Workload)
	cw, err := client.OpenWindow(ctx, c, pageID,
		client.WindowOptions{DeviceID: o.DeviceID, WaitForPage: o.WaitForPage, Observer: (*observer)(w),
			CommandsOnSocket: o.CommandsOnSocket, UndoDepth: o.UndoDepth})
	if err != nil {
		w.fail("open", time.Now())
		return nil, err
	}
	w.cw = cw
	s.mu.Lock()
	w.pg.wins = append(w.pg.wins, w)
	s.wins = append(s.wins, w)
	s.mu.Unlock()
	return w, nil
}

// Client is the window's client.Window.
func (w *Window) Client() *client.Window { return w.cw }

// Page is the window's page.
func (w *Window) Page() *Page { return w.pg }

// Data is Options.Data.
func (w *Window) Data() any { return w.data }

// Recorder is the window's recorder.
func (w *Window) Recorder() *metrics.Recorder { return w.rec }

// Outcome is what became of one operation.
type Outcome struct {
	Type, ID  string
	Committed bool
	Seq       int64
	// Refused is the window's refusal (the reducer's code, duplicate-id,
	// not-pending, or a toast such as nothing-to-undo): nothing was sent.
	Refused string
	// Rejected is the server's rejection code.
	Rejected string
	// Err: the command was not decided (ErrorKind classifies it).
	Err error
}

// ErrClosed is the answer of a closed window.
var ErrClosed = errors.New("kbkit: the window is closed")

// Local is one operation of the user: build draws a command from the
// rendered page, the window applies it and sends it, and the outcome is
// measured, its commit latency from start (the operation's intended
// start). wl names what drew it.
func (w *Window) Local(ctx context.Context, wl string, start time.Time, build func(rendered kbcore.Doc) kbcore.Command) Outcome {
	measured := w.s.Measuring()
	rec := w.recorder(measured)
	w.workload.Store(&wl)
	var cmd kbcore.Command
	env, code, ok := w.cw.Local(func(doc kbcore.Doc) kbcore.Command { cmd = build(doc); return cmd })
	now := time.Now()
	rec.Count(metrics.Commands, now, 1)
	rec.TypeCount(cmd.Type, metrics.Commands)
	if !ok {
		rec.Count(metrics.LocalRejections, now, 1)
		rec.TypeCount(cmd.Type, metrics.LocalRejections)
		return Outcome{Type: cmd.Type, ID: cmd.ID, Refused: code}
	}
	return w.send(ctx, wl, env, start, measured)
}

// Undo reverts the window's last own step with new commands (ids: one
// per command, at least as many as the step has), sent in order until
// one is not committed; the outcome is the last one's.
func (w *Window) Undo(ctx context.Context, wl string, start time.Time, ids []string) Outcome {
	return w.step(ctx, wl, start, ids, w.cw.Undo)
}

// Redo reverts the window's last undo, as Undo.
func (w *Window) Redo(ctx context.Context, wl string, start time.Time, ids []string) Outcome {
	return w.step(ctx, wl, start, ids, w.cw.Redo)
}

func (w *Window) step(ctx context.Context, wl string, start time.Time, ids []string, fn func([]string) ([]kbcore.Envelope, string)) Outcome {
	measured := w.s.Measuring()
	rec := w.recorder(measured)
	w.workload.Store(&wl)
	envs, code := fn(ids)
	now := time.Now()
	rec.Count(metrics.Commands, now, 1)
	if len(envs) == 0 {
		rec.Count(metrics.LocalRejections, now, 1)
		return Outcome{Refused: code}
	}
	var out Outcome
	for _, env := range envs {
		if out = w.send(ctx, wl, env, start, measured); !out.Committed {
			break
		}
	}
	return out
}

func (w *Window) recorder(measured bool) *metrics.Recorder {
	if !measured {
		return metrics.Discard
	}
	return w.rec
}

// send posts env until it is decided and measures the outcome. The stamp
// is in place before: no echo of the command can arrive earlier.
func (w *Window) send(ctx context.Context, wl string, env kbcore.Envelope, start time.Time, measured bool) Outcome {
	rec := w.recorder(measured)
	out := Outcome{Type: env.Type, ID: env.ID}
	st := &stamp{start: start, origin: w, workload: wl, measured: measured}
	st.left.Store(int32(w.s.windowsOn(w.pg)))
	w.s.stamps.Store(env.ID, st)
	seq, rej, err := w.cw.Send(ctx, env)
	now := time.Now()
	sample := Sample{At: now, Workload: wl, Type: env.Type}
	switch {
	case errors.Is(err, client.ErrNotPending):
		w.s.stamps.Delete(env.ID)
		out.Refused = "not-pending"
		return out
	case err != nil:
		w.s.stamps.Delete(env.ID)
		sample.Name, sample.Kind = Error, ErrorKind(err)
		rec.Error(sample.Kind, now)
		rec.TypeCount(env.Type, metrics.Errors)
		out.Err = err
	case rej != nil:
		w.s.stamps.Delete(env.ID)
		sample.Name, sample.Code = Rejection, rej.Code
		rec.Rejection(rej.Code, now)
		rec.TypeCount(env.Type, metrics.Rejections)
		out.Rejected = rej.Code
	default:
		w.pg.Saw(seq)
		sample.Name, sample.Latency = metrics.Commit, now.Sub(start)
		rec.Count(metrics.Committed, now, 1)
		rec.Latency(metrics.Commit, now, sample.Latency)
		rec.TypeCount(env.Type, metrics.Committed)
		rec.TypeLatency(env.Type, metrics.Commit, sample.Latency)
		out.Committed, out.Seq = true, seq
		if title, ok := titleOf(kbcore.Command{Type: env.Type, Payload: env.Payload}); ok {
			w.s.SetTitle(w.pg.ID, title)
		}
	}
	if measured {
		w.emit(sample)
	}
	w.s.sweep(now)
	return out
}

func (w *Window) emit(s Sample) {
	if w.tap != nil {
		w.tap(s)
	}
}

// fail records an error of kind at at, under the window's last workload.
func (w *Window) fail(kind string, at time.Time) {
	w.rec.Error(kind, at)
	w.emit(Sample{Name: Error, At: at, Kind: kind, Workload: *w.workload.Load()})
}

// Converge waits until the window has applied every command its page is
// known here to have, with nothing pending, and records the wait since
// from (metrics.Convergence). Past deadline it records a not-converged
// error and says so.
func (w *Window) Converge(from, deadline time.Time) error {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for !w.cw.Converged(w.pg.Head()) {
		select {
		case <-w.cw.Changed():
		case <-time.After(20 * time.Millisecond):
		case <-timer.C:
			w.fail("not-converged", time.Now())
			return fmt.Errorf("kbkit: window on page %s not converged after %s (at seq %d, page head %d)",
				w.pg.ID, time.Since(from).Round(time.Millisecond), w.cw.Seq(), w.pg.Head())
		}
	}
	now := time.Now()
	w.rec.Latency(metrics.Convergence, now, now.Sub(from))
	w.emit(Sample{Name: metrics.Convergence, At: now, Latency: now.Sub(from), Workload: *w.workload.Load()})
	return nil
}

// Close closes the window; it leaves the session.
func (w *Window) Close() {
	if w.closed.Swap(true) {
		return
	}
	w.cw.Close()
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	w.pg.wins = without(w.pg.wins, w)
	s.wins = without(s.wins, w)
}

// Closed reports whether Close was called.
func (w *Window) Closed() bool { return w.closed.Load() }

func without(ws []*Window, w *Window) []*Window {
	out := ws[:0]
	for _, x := range ws {
		if x != w {
			out = append(out, x)
		}
	}
	return out
}

// ---- the client.Window's observer: its reader goroutine's events ----

// observer is the window as its client.Window's observer (a separate type,
// so that the window's API does not show these methods).
type observer Window

func (o *observer) w() *Window { return (*Window)(o) }

// Subscribed counts connects, and reconnects.
func (o *observer) Subscribed(reconnect bool) {
	now := time.Now()
	o.rec.Count(metrics.Connects, now, 1)
	if reconnect {
		o.rec.Count(metrics.Reconnects, now, 1)
		o.w().emit(Sample{Name: Reconnect, At: now, Workload: *o.workload.Load()})
	}
}

// Snapshot counts refetches.
func (o *observer) Snapshot(seq int64, refetch bool) {
	o.pg.Saw(seq)
	if refetch {
		now := time.Now()
		o.rec.Count(metrics.Refetches, now, 1)
		o.w().emit(Sample{Name: Refetch, At: now, Workload: *o.workload.Load()})
	}
}

// Retry counts resends.
func (o *observer) Retry() { o.rec.Count(metrics.Retries, time.Now(), 1) }

// Error counts a failure by kind.
func (o *observer) Error(kind string) { o.w().fail(kind, time.Now()) }

// Attempt: Send's answer is measured by send.
func (o *observer) Attempt(client.Attempt) {}

// Rejected: a refetch found the command being sent rejected; its Send
// answers the same rejection, measured by send.
func (o *observer) Rejected(string, string) {}

// Event measures echo (at the window that issued the command) and
// fan-out (at the page's other windows here). An event counts when a
// window applies it and its command is measured: sent while measuring
// here, or by another process (no stamp) while measuring. So echoes =
// committed × windows of the page, in a single process.
func (o *observer) Event(ev client.Event, applied bool, now time.Time) {
	s, rec := o.s, o.rec
	o.pg.Saw(ev.Seq)
	if !applied {
		return
	}
	counted := s.Measuring()
	if v, ok := s.stamps.Load(ev.Cmd.ID); ok {
		st := v.(*stamp)
		counted = st.measured
		if st.measured {
			d := now.Sub(st.start)
			sample := Sample{At: now, Latency: d, Workload: st.workload, Type: ev.Cmd.Type, Origin: st.origin}
			if st.origin == o.w() {
				sample.Name = metrics.Echo
				rec.Latency(metrics.Echo, now, d)
				rec.TypeLatency(ev.Cmd.Type, metrics.Echo, d)
			} else {
				sample.Name = metrics.Fanout
				rec.Latency(metrics.Fanout, now, d)
			}
			o.w().emit(sample)
		}
		if st.origin == o.w() {
			st.echoed.Store(true)
		}
		if st.left.Add(-1) <= 0 && st.echoed.Load() {
			s.stamps.Delete(ev.Cmd.ID)
		}
	}
	if counted {
		rec.Count(metrics.Echoes, now, 1)
	}
	if title, ok := titleOf(ev.Cmd); ok {
		s.SetTitle(o.pg.ID, title)
	}
}
