package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/sim"
)

func TestMain(m *testing.M) { os.Exit(pgprovider.RunTests(m)) }

// recorder is a WindowObserver that keeps what it saw.
type recorder struct {
	client.NopObserver
	mu       sync.Mutex
	subs     int
	snaps    []int64
	applied  map[string]int64 // command id -> seq
	received int
	errs     []string
}

func (r *recorder) Subscribed(bool) { r.mu.Lock(); r.subs++; r.mu.Unlock() }
func (r *recorder) Snapshot(seq int64, _ bool) {
	r.mu.Lock()
	r.snaps = append(r.snaps, seq)
	r.mu.Unlock()
}
func (r *recorder) Event(ev client.Event, applied bool, _ time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.received++
	if applied {
		if r.applied == nil {
			r.applied = map[string]int64{}
		}
		r.applied[ev.Cmd.ID] = ev.Seq
	}
}
func (r *recorder) Retry()            {}
func (r *recorder) Error(kind string) { r.mu.Lock(); r.errs = append(r.errs, kind); r.mu.Unlock() }

func (r *recorder) seqOf(id string) (int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.applied[id]
	return s, ok
}

type fixture struct {
	clients []*client.Client
	devices []string
	page    string
	base    string // the server's URL
	stop    func() // stops the server
}

// setup starts the reference server, pairs two devices and creates a page
// with one node "n".
func setup(t *testing.T) fixture {
	t.Helper()
	ctx := context.Background()
	e, err := sim.NewEmbedded(ctx, pgprovider.ForTest(t), sim.EmbeddedOptions{Instances: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	tokens, err := e.Devices(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	f := fixture{page: uuid.NewString(), base: e.Endpoints()[0], stop: e.Close}
	for _, tok := range tokens {
		c := client.New(e.Endpoints()[0], tok)
		me, err := c.Whoami(ctx)
		if err != nil {
			t.Fatal(err)
		}
		f.clients = append(f.clients, c)
		f.devices = append(f.devices, me.DeviceID)
	}
	send := func(typ string, payload any) {
		b, _ := json.Marshal(payload)
		_, rej, err := f.clients[0].Command(ctx, kbcore.Envelope{ID: uuid.NewString(), DeviceID: f.devices[0], PageID: f.page, Type: typ, Payload: b})
		if err != nil || rej != nil {
			t.Fatalf("%s: %v %v", typ, err, rej)
		}
	}
	send(kbcore.TypeCreatePage, map[string]any{"title": "window test " + f.page[:8]})
	send(kbcore.TypeCreateAfter, map[string]any{"node": "n", "text": "seed"})
	return f
}

func (f fixture) open(t *testing.T, i int, obs client.WindowObserver) *client.Window {
	t.Helper()
	return f.openWith(t, i, client.WindowOptions{Observer: obs})
}

func (f fixture) openWith(t *testing.T, i int, o client.WindowOptions) *client.Window {
	t.Helper()
	w, err := client.OpenWindow(context.Background(), f.clients[i], f.page, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	if w.DeviceID() != f.devices[i] {
		t.Fatalf("device %s, want %s (kb.whoami)", w.DeviceID(), f.devices[i])
	}
	return w
}

func cmd(id, typ string, payload any) kbcore.Command {
	b, _ := json.Marshal(payload)
	return kbcore.Command{ID: id, Type: typ, Payload: b}
}

// do issues one command and sends it.
func do(t *testing.T, w *client.Window, c kbcore.Command) (int64, *kbcore.Rejection) {
	t.Helper()
	env, code, ok := w.Local(func(kbcore.Doc) kbcore.Command { return c })
	if !ok {
		t.Fatalf("%s refused by the window: %s", c.Type, code)
	}
	seq, rej, err := w.Send(context.Background(), env)
	if err != nil {
		t.Fatalf("%s: %v", c.Type, err)
	}
	return seq, rej
}

// converge waits until w has applied head with nothing pending.
func converge(t *testing.T, w *client.Window, head int64) {
	t.Helper()
	deadline := time.After(time.Minute) // a hang detector: a busy machine is slow, not stuck
	for !w.Converged(head) {
		select {
		case <-w.Changed():
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatalf("window at seq %d, not converged to %d", w.Seq(), head)
		}
	}
}

func text(t *testing.T, d kbcore.Doc, id string) string {
	t.Helper()
	n, ok := d.Node(id)
	if !ok {
		t.Fatalf("no node %s", id)
	}
	return n.Text
}

// TestWindowCommitsAndFansOut: a command committed through one window is
// applied by its own echo there and by the subscription of another
// device's window, which both observers see.
func TestWindowCommitsAndFansOut(t *testing.T) {
	f := setup(t)
	ra, rb := &recorder{}, &recorder{}
	a, b := f.open(t, 0, ra), f.open(t, 1, rb)
	if a.Seq() != 2 || len(ra.snaps) != 1 || ra.snaps[0] != 2 || ra.subs != 1 {
		t.Fatalf("opened at seq %d, snapshots %v, %d subscriptions", a.Seq(), ra.snaps, ra.subs)
	}
	id := uuid.NewString()
	seq, rej := do(t, a, cmd(id, kbcore.TypeCreateAfter, map[string]any{"after": "n", "text": "hello"}))
	if rej != nil || seq != 3 {
		t.Fatalf("seq %d, rejection %v", seq, rej)
	}
	// Before its echo the command is pending and rendered.
	converge(t, a, seq)
	converge(t, b, seq)
	for _, w := range []*client.Window{a, b} {
		if got := text(t, w.Rendered(), id); got != "hello" {
			t.Errorf("rendered %q", got)
		}
		if doc, s := w.Server(); s != seq || text(t, doc, id) != "hello" {
			t.Errorf("server at %d", s)
		}
	}
	for name, r := range map[string]*recorder{"own": ra, "other": rb} {
		if s, ok := r.seqOf(id); !ok || s != seq {
			t.Errorf("%s window: event of the command applied at %d, %v", name, s, ok)
		}
	}
	if len(ra.errs)+len(rb.errs) != 0 {
		t.Errorf("errors %v %v", ra.errs, rb.errs)
	}
	// A window's subscription hands its events to the window on its
	// reader: no buffer of events is held for a channel nobody reads.
	if n := client.EventBuffer(a); n != 0 {
		t.Errorf("the window's subscription holds a buffer of %d events", n)
	}
	// A command the window no longer has pending must not be sent.
	if _, _, err := a.Send(context.Background(), kbcore.Envelope{ID: id}); !errors.Is(err, client.ErrNotPending) {
		t.Errorf("resend of a settled command: %v", err)
	}
}

// TestWindowRollsBackARejection: a command the window accepted but the
// server rejects (its node was deleted meanwhile by another window) is
// rolled back: gone from the rendered page, nothing pending.
func TestWindowRollsBackARejection(t *testing.T) {
	f := setup(t)
	a, b := f.open(t, 0, nil), f.open(t, 1, nil)
	env, _, ok := b.Local(func(d kbcore.Doc) kbcore.Command {
		if text(t, d, "n") != "seed" {
			t.Error("b does not render n")
		}
		return cmd(uuid.NewString(), kbcore.TypeEditText, map[string]any{"node": "n", "text": "late"})
	})
	if !ok {
		t.Fatal("b refused the edit")
	}
	if text(t, b.Rendered(), "n") != "late" {
		t.Fatal("the pending edit is not rendered")
	}
	head, rej := do(t, a, cmd(uuid.NewString(), kbcore.TypeDelete, map[string]any{"node": "n"}))
	if rej != nil {
		t.Fatal(rej)
	}
	_, rej, err := b.Send(context.Background(), env)
	if err != nil || rej == nil {
		t.Fatalf("edit of a deleted node: err %v, rejection %v", err, rej)
	}
	converge(t, b, head)
	if _, ok := b.Rendered().Node("n"); ok {
		t.Error("the rejected edit still renders the deleted node")
	}
	if b.Converged(head + 1) {
		t.Error("converged past the page's head")
	}
}

// TestWindowUndoDepth: a window opened with UndoDepth 1 undoes its last
// step only, one with NoUndoHistory none, and both keep that after
// Reopen; their edits commit as any window's.
func TestWindowUndoDepth(t *testing.T) {
	f := setup(t)
	for _, c := range []struct {
		depth, undoable int
	}{{1, 1}, {client.NoUndoHistory, 0}} {
		w := f.openWith(t, 0, client.WindowOptions{UndoDepth: c.depth})
		for round := range 2 {
			var seq int64
			for i := range 3 {
				seq, _ = do(t, w, cmd(uuid.NewString(), kbcore.TypeEditText, map[string]any{"node": "n", "text": fmt.Sprintf("d%d r%d %d", c.depth, round, i)}))
			}
			converge(t, w, seq)
			for k := range c.undoable + 1 {
				envs, code := w.Undo([]string{uuid.NewString()})
				if k < c.undoable {
					if len(envs) != 1 {
						t.Fatalf("depth %d, round %d: undo %d issued %d commands (%q)", c.depth, round, k, len(envs), code)
					}
					s, rej, err := w.Send(context.Background(), envs[0])
					if err != nil || rej != nil {
						t.Fatalf("depth %d: undo %d: %v %v", c.depth, k, err, rej)
					}
					converge(t, w, s)
					seq = s
					continue
				}
				if len(envs) != 0 || code != kbcore.ToastNothingToUndo {
					t.Fatalf("depth %d, round %d: undo %d past the depth gave %d commands, %q", c.depth, round, k, len(envs), code)
				}
			}
			if !w.Reopen() {
				t.Fatalf("depth %d: the window did not reopen", c.depth)
			}
		}
	}
}

// TestWindowUndoRedo: undo issues the inverse of the last own step as new
// commands, redo reverts it; both commit and render.
func TestWindowUndoRedo(t *testing.T) {
	f := setup(t)
	w := f.open(t, 0, nil)
	if _, code := w.Undo([]string{uuid.NewString()}); code != kbcore.ToastNothingToUndo {
		t.Fatalf("undo with nothing done: %q", code)
	}
	seq, _ := do(t, w, cmd(uuid.NewString(), kbcore.TypeEditText, map[string]any{"node": "n", "text": "typed"}))
	converge(t, w, seq)
	step := func(envs []kbcore.Envelope, code string, want string) {
		t.Helper()
		if len(envs) == 0 {
			t.Fatalf("nothing issued: %q", code)
		}
		if got := text(t, w.Rendered(), "n"); got != want {
			t.Fatalf("rendered %q before the commit, want %q", got, want)
		}
		var last int64
		for _, env := range envs {
			s, rej, err := w.Send(context.Background(), env)
			if err != nil || rej != nil {
				t.Fatalf("%v %v", err, rej)
			}
			last = s
		}
		converge(t, w, last)
		if doc, _ := w.Server(); text(t, doc, "n") != want {
			t.Fatalf("server %q, want %q", text(t, doc, "n"), want)
		}
	}
	envs, code := w.Undo([]string{uuid.NewString(), uuid.NewString()})
	step(envs, code, "seed")
	envs, code = w.Redo([]string{uuid.NewString(), uuid.NewString()})
	step(envs, code, "typed")
}

// TestWindowsOfAPageShareTheirWork: windows of one page in one process
// hold the same document value (one snapshot parsed for both, each echo
// applied once), and it is the document every window converges to.
func TestWindowsOfAPageShareTheirWork(t *testing.T) {
	f := setup(t)
	a, b := f.open(t, 0, nil), f.open(t, 1, nil)
	var head int64
	for i := 0; i < 5; i++ {
		head, _ = do(t, []*client.Window{a, b}[i%2], cmd(uuid.NewString(), kbcore.TypeEditText, map[string]any{"node": "n", "text": strings.Repeat("x", i+1)}))
	}
	converge(t, a, head)
	converge(t, b, head)
	// A window whose own command is in flight applies its echoes alone,
	// and two windows taking the same event at the same moment may both
	// apply it: the next echoes neither is waiting for bring them to one
	// value (the first applies, the other takes its result or adopts it).
	ctx := context.Background()
	var da, db kbcore.Doc
	for i := 0; ; i++ {
		da, _ = a.Server()
		db, _ = b.Server()
		if da.Same(db) {
			break
		}
		if i == 20 {
			t.Fatal("after 20 echoes of another device's commands the windows of the page still hold different document values")
		}
		b2, _ := json.Marshal(map[string]any{"node": "n", "text": strings.Repeat("y", i+1)})
		_, rej, err := f.clients[0].Command(ctx, kbcore.Envelope{ID: uuid.NewString(), DeviceID: f.devices[0], PageID: f.page, Type: kbcore.TypeEditText, Payload: b2})
		if err != nil || rej != nil {
			t.Fatalf("edit: %v %v", err, rej)
		}
		head++
		converge(t, a, head)
		converge(t, b, head)
	}
	if n, _ := da.Node("n"); !strings.HasPrefix(n.Text, "x") && !strings.HasPrefix(n.Text, "y") {
		t.Fatalf("text %q", n.Text)
	}
}

// attempts is a WindowObserver that keeps the window's kb.command calls.
type attempts struct {
	client.NopObserver
	mu  sync.Mutex
	all []client.Attempt
}

func (a *attempts) Attempt(x client.Attempt) { a.mu.Lock(); a.all = append(a.all, x); a.mu.Unlock() }

func (a *attempts) list() []client.Attempt {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]client.Attempt(nil), a.all...)
}

// TestWindowReportsAttempts: the observer sees each kb.command call of a
// command with its times: one committed call with its seq while the
// server is up; once it is down, the failed calls, paced by the window's
// Backoff (none cut short: the window gives up during a pause rather than
// call again with an ended context), the command then rolled back.
func TestWindowReportsAttempts(t *testing.T) {
	f := setup(t)
	obs := &attempts{}
	backoff := client.Doubling(40*time.Millisecond, 80*time.Millisecond)
	w := f.openWith(t, 0, client.WindowOptions{Observer: obs, AttemptTimeout: 2 * time.Second, Backoff: backoff})
	seq, rej := do(t, w, cmd(uuid.NewString(), kbcore.TypeEditText, map[string]any{"node": "n", "text": "up"}))
	if rej != nil {
		t.Fatal(rej)
	}
	got := obs.list()
	if len(got) != 1 || !got[0].Committed() || got[0].Ack.Seq != seq || got[0].Ack.Duplicate || got[0].Abandoned ||
		got[0].To.Before(got[0].From) || got[0].Env.PageID != f.page {
		t.Fatalf("one committed attempt at seq %d, got %+v", seq, got)
	}

	converge(t, w, seq)
	f.stop()
	env, _, ok := w.Local(func(kbcore.Doc) kbcore.Command {
		return cmd(uuid.NewString(), kbcore.TypeEditText, map[string]any{"node": "n", "text": "down"})
	})
	if !ok {
		t.Fatal("the window refused the edit")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 800*time.Millisecond)
	defer cancel()
	if _, rej, err := w.Send(ctx, env); err == nil || rej != nil {
		t.Fatalf("a command sent to a stopped server: err %v, rejection %v", err, rej)
	}
	down := obs.list()[1:]
	if len(down) < 3 {
		t.Fatalf("%d attempts in 800 ms with pauses of 40 to 80 ms", len(down))
	}
	for i, a := range down {
		if a.Env.ID != env.ID || a.Err == nil || a.Committed() {
			t.Fatalf("attempt %d: %+v", i, a)
		}
		if a.Abandoned && i < len(down)-1 {
			t.Fatalf("attempt %d of %d abandoned, and yet retried", i, len(down))
		}
		if i > 0 {
			if gap, want := a.From.Sub(down[i-1].To), backoff(i-1); gap < want-5*time.Millisecond {
				t.Fatalf("attempt %d began %s after the previous, want the backoff %s", i, gap, want)
			}
		}
	}
	if ids, _ := w.Pending(); len(ids) != 0 {
		t.Fatalf("pending after the caller gave up: %v", ids)
	}
}

// TestWindowReopen: a window reopens (its undo history forgotten, its
// document and seq kept) only when nothing is pending.
func TestWindowReopen(t *testing.T) {
	f := setup(t)
	w := f.open(t, 0, nil)
	seq, _ := do(t, w, cmd(uuid.NewString(), kbcore.TypeEditText, map[string]any{"node": "n", "text": "typed"}))
	converge(t, w, seq)
	id := uuid.NewString()
	env, _, ok := w.Local(func(kbcore.Doc) kbcore.Command {
		return cmd(id, kbcore.TypeEditText, map[string]any{"node": "n", "text": "more"})
	})
	if !ok {
		t.Fatal("refused")
	}
	if ids, _ := w.Pending(); len(ids) != 1 || ids[0] != id {
		t.Fatalf("pending %v, want [%s]", ids, id)
	}
	if w.Reopen() {
		t.Fatal("reopened with a command pending")
	}
	if _, rej, err := w.Send(context.Background(), env); err != nil || rej != nil {
		t.Fatal(err, rej)
	}
	converge(t, w, seq+1)
	if !w.Reopen() {
		t.Fatal("not reopened with nothing pending")
	}
	if doc, s := w.Server(); s != seq+1 || text(t, doc, "n") != "more" {
		t.Fatalf("reopened at seq %d with %q", s, text(t, doc, "n"))
	}
	if envs, code := w.Undo([]string{uuid.NewString()}); len(envs) != 0 || code != kbcore.ToastNothingToUndo {
		t.Fatalf("undo after a reopen: %d commands, %q", len(envs), code)
	}
}

func TestDoubling(t *testing.T) {
	b := client.Doubling(50*time.Millisecond, 400*time.Millisecond)
	want := []time.Duration{50, 100, 200, 400, 400, 400}
	for i, w := range want {
		if got := b(i); got != w*time.Millisecond {
			t.Errorf("attempt %d: %s, want %s", i, got, w*time.Millisecond)
		}
	}
}

// TestWindowCommandsOnSocket: a window with CommandsOnSocket sends its
// commands as mutations on its WebSocket (the server counts their time
// under transport "ws"), gets the answers it would get over HTTP (commits
// in order, a rejection rolled back), and converges with a window that
// posts its commands.
func TestWindowCommandsOnSocket(t *testing.T) {
	f := setup(t)
	ra := &recorder{}
	a := f.openWith(t, 0, client.WindowOptions{Observer: ra, CommandsOnSocket: true})
	b := f.open(t, 1, nil)
	var head int64
	for i := range 10 {
		seq, rej := do(t, a, cmd(uuid.NewString(), kbcore.TypeEditText, map[string]any{"node": "n", "text": "v" + strconv.Itoa(i)}))
		if rej != nil || seq != int64(3+i) {
			t.Fatalf("command %d: seq %d, rejection %v", i, seq, rej)
		}
		head = seq
	}
	// b deletes n; a's edit of it, accepted by a's window, is rejected.
	env, _, ok := a.Local(func(kbcore.Doc) kbcore.Command {
		return cmd(uuid.NewString(), kbcore.TypeEditText, map[string]any{"node": "n", "text": "late"})
	})
	if !ok {
		t.Fatal("a refused the edit")
	}
	head, rej := do(t, b, cmd(uuid.NewString(), kbcore.TypeDelete, map[string]any{"node": "n"}))
	if rej != nil {
		t.Fatal(rej)
	}
	if _, rej, err := a.Send(context.Background(), env); err != nil || rej == nil {
		t.Fatalf("edit of a deleted node: err %v, rejection %v", err, rej)
	}
	converge(t, a, head)
	converge(t, b, head)
	if _, ok := a.Rendered().Node("n"); ok {
		t.Error("the rejected edit still renders the deleted node")
	}
	if len(ra.errs) != 0 {
		t.Errorf("errors %v", ra.errs)
	}
	res, err := http.Get(f.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(body), `kbkit_command_seconds_total{transport="ws"}`) {
		t.Error(`the server saw no kb.command on a WebSocket (no kbkit_command_seconds_total{transport="ws"})`)
	}
}

// A command sent on a socket that has ended is undecided, never rejected:
// ErrSocketEnded, which IsRetryable.
func TestSubmitOnAnEndedSocket(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	sub, err := f.clients[0].Subscribe(ctx, f.page, 0)
	if err != nil {
		t.Fatal(err)
	}
	sub.Close()
	env := kbcore.Envelope{ID: uuid.NewString(), DeviceID: f.devices[0], PageID: f.page, Type: kbcore.TypeEditText,
		Payload: json.RawMessage(`{"node":"n","text":"x"}`)}
	_, rej, err := f.clients[0].SubmitOn(ctx, sub, env)
	if !errors.Is(err, client.ErrSocketEnded) || !client.IsRetryable(err) || rej != nil {
		t.Fatalf("err %v (retryable %v), rejection %v; want ErrSocketEnded", err, client.IsRetryable(err), rej)
	}
	// Sent again over HTTP, it commits: the failed attempt decided nothing.
	if seq, rej, err := f.clients[0].Command(ctx, env); err != nil || rej != nil || seq != 3 {
		t.Fatalf("resent: seq %d, rejection %v, err %v", seq, rej, err)
	}
}

// A window with CommandsOnSocket whose socket is gone (here: closed) sends
// over HTTP instead of waiting for a socket that will not come back.
func TestWindowCommandsOnSocketWithoutASocket(t *testing.T) {
	f := setup(t)
	a := f.openWith(t, 0, client.WindowOptions{CommandsOnSocket: true})
	env, _, ok := a.Local(func(kbcore.Doc) kbcore.Command {
		return cmd(uuid.NewString(), kbcore.TypeEditText, map[string]any{"node": "n", "text": "after close"})
	})
	if !ok {
		t.Fatal("the window refused the edit")
	}
	a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if seq, rej, err := a.Send(ctx, env); err != nil || rej != nil || seq != 3 {
		t.Fatalf("seq %d, rejection %v, err %v; want it committed over HTTP", seq, rej, err)
	}
}

// TestWindowsOfAPageApplyEachEventOnce: windows of one page in one
// process, opened at the same seq and all sending at once, apply each
// event once between them and keep one document value: none in step with
// the others ever has to compare whole documents to take another's (two
// subscriptions decoding the same event at the same time, or two windows
// applying it at the same time, each made its own). A window whose reader
// fell further behind than the page's ring applies events alone, and
// compares once to rejoin; that is not counted.
func TestWindowsOfAPageApplyEachEventOnce(t *testing.T) {
	f := setup(t)
	const windows, each = 6, 40
	ws := make([]*client.Window, windows)
	for i := range ws {
		ws[i] = f.open(t, i%2, nil)
	}
	before := client.DocComparisonsInStep()
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range each {
				env, code, ok := w.Local(func(kbcore.Doc) kbcore.Command {
					return cmd(uuid.NewString(), kbcore.TypeEditText, map[string]any{"node": "n", "text": fmt.Sprint(i, " ", k)})
				})
				if !ok {
					t.Errorf("window %d refused an edit: %s", i, code)
					return
				}
				if _, rej, err := w.Send(context.Background(), env); err != nil || rej != nil {
					t.Errorf("window %d: %v %v", i, err, rej)
					return
				}
			}
		}()
	}
	wg.Wait()
	head := int64(2 + windows*each)
	for _, w := range ws {
		converge(t, w, head)
	}
	first, _ := ws[0].Server()
	for i, w := range ws[1:] {
		if d, _ := w.Server(); !d.Same(first) {
			t.Errorf("window %d holds a document of its own", i+1)
		}
	}
	if n := client.DocComparisonsInStep() - before; n != 0 {
		t.Errorf("%d comparisons of whole documents by windows in step, want none", n)
	}
}

// TestWindowResubscribesForALostEcho: the echo of an acknowledged command
// is lost and no later event comes; after EchoWait the window
// resubscribes after its seq and applies the echo (spec/window.md).
func TestWindowResubscribesForALostEcho(t *testing.T) {
	f := setup(t)
	w := f.openWith(t, 0, client.WindowOptions{EchoWait: 100 * time.Millisecond})
	id := uuid.NewString()
	dropped := false
	client.DropEvents(w, func(ev client.Event) bool {
		if ev.Cmd.ID == id && !dropped {
			dropped = true
			return true
		}
		return false
	})
	seq, rej := do(t, w, cmd(id, kbcore.TypeEditText, map[string]any{"node": "n", "text": "lost once"}))
	if rej != nil {
		t.Fatalf("rejected: %v", rej)
	}
	converge(t, w, seq)
	if !dropped {
		t.Fatal("the echo was not dropped")
	}
	if got := text(t, w.Rendered(), "n"); got != "lost once" {
		t.Fatalf("rendered %q", got)
	}
}

// TestWindowSettlesARefusedCommand: a 4xx answer other than 408, 409 and
// 429 (here 403: the envelope names another device) is final: Send
// reports it, and the window rolls the command back with code refused.
func TestWindowSettlesARefusedCommand(t *testing.T) {
	f := setup(t)
	w, err := client.OpenWindow(context.Background(), f.clients[0], f.page, client.WindowOptions{DeviceID: f.devices[1]})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	env, code, ok := w.Local(func(kbcore.Doc) kbcore.Command {
		return cmd(uuid.NewString(), kbcore.TypeEditText, map[string]any{"node": "n", "text": "not mine"})
	})
	if !ok {
		t.Fatalf("refused by the window: %s", code)
	}
	var rej *kbcore.Rejection
	_, rej, err = w.Send(context.Background(), env)
	if err == nil || rej != nil || !client.Refused(err) {
		t.Fatalf("Send: rej %v, err %v; want a refusal", rej, err)
	}
	if ids, _ := w.Pending(); len(ids) != 0 {
		t.Fatalf("still pending: %v", ids)
	}
	if got := text(t, w.Rendered(), "n"); got != "seed" {
		t.Fatalf("rendered %q, want the rollback to seed", got)
	}
}

// TestWindowSettlesACommandPostedDuringARefetch: a command posted after a
// refetch's kb.page request took its ids commits below the snapshot's
// seq; no outcome names it and its echo is a duplicate. The ack of the
// resend the snapshot asks for settles it (spec/window.md).
func TestWindowSettlesACommandPostedDuringARefetch(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	w := f.open(t, 0, nil)
	foreign := func(id, text string) int64 {
		b, _ := json.Marshal(map[string]any{"node": "n", "text": text})
		seq, rej, err := f.clients[1].Command(ctx, kbcore.Envelope{ID: id, DeviceID: f.devices[1], PageID: f.page, Type: kbcore.TypeEditText, Payload: b})
		if err != nil || rej != nil {
			t.Fatalf("foreign command: %v %v", err, rej)
		}
		return seq
	}
	// Lose the first foreign echo: the second shows a gap, and the
	// window refetches.
	lost := uuid.NewString()
	client.DropEvents(w, func(ev client.Event) bool { return ev.Cmd.ID == lost })
	foreign(lost, "f1")
	var own int64
	posted := make(chan error, 1)
	client.BeforePage(w, func() {
		client.BeforePage(w, nil)
		env, code, ok := w.Local(func(kbcore.Doc) kbcore.Command {
			return cmd(uuid.NewString(), kbcore.TypeEditText, map[string]any{"node": "n", "text": "mine"})
		})
		if !ok {
			posted <- fmt.Errorf("refused by the window: %s", code)
			return
		}
		var err error
		var rej *kbcore.Rejection
		if own, rej, err = w.Send(ctx, env); err == nil && rej != nil {
			err = fmt.Errorf("rejected: %v", rej)
		}
		posted <- err
	})
	head := foreign(uuid.NewString(), "f2")
	select {
	case err := <-posted:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second): // a hang detector
		t.Fatal("no refetch after the gap")
	}
	converge(t, w, max(head, own))
	if got := text(t, w.Rendered(), "n"); got != "mine" {
		t.Fatalf("rendered %q", got)
	}
}
