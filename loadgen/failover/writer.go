package failover

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/kbcore"
)

// Retry pacing of an undecided command: 50 ms doubling to 400 ms. The
// server's Retry-After (1 s) is an upper hint; retrying sooner measures
// the outage to a twentieth of a second.
const (
	firstBackoff = 50 * time.Millisecond
	maxBackoff   = 400 * time.Millisecond
	// attemptTimeout bounds one kb.command call.
	attemptTimeout = 10 * time.Second
)

// writer is one editor: a device, a Window on its page with its own
// kb.onPage subscription, sending one command at a time and retrying it
// with the same id until it is decided, as spec/window.md says.
type writer struct {
	r    *run
	idx  int
	c    *client.Client
	dev  string
	page *page
	rng  *rand.Rand

	mu      sync.Mutex
	w       *kbcore.Window
	issued  map[string]time.Time // when each pending command was issued
	nodes   []string             // own nodes, once their create-after committed
	n       int
	sub     *client.Subscription
	closing bool
	stop    context.CancelFunc
	ctx     context.Context
	done    chan struct{}
	// undecided: commands still undecided when the settle time ran out.
	undecided int
	// reopenWanted: a reopen was requested and not done yet; reopens:
	// how many were done (requestReopen).
	reopenWanted bool
	reopens      int
}

func newWriter(r *run, idx int, c *client.Client, dev string, p *page) *writer {
	ctx, stop := context.WithCancel(context.Background())
	return &writer{r: r, idx: idx, c: c, dev: dev, page: p, issued: map[string]time.Time{},
		rng: rand.New(rand.NewPCG(uint64(r.cfg.Seed), uint64(idx))), ctx: ctx, stop: stop}
}

// open starts the window from a snapshot and subscribes after its seq.
func (w *writer) open(ctx context.Context) error {
	var snap client.Snapshot
	var err error
	for attempt := 0; attempt < 40; attempt++ {
		if snap, err = w.c.Page(ctx, w.page.id, nil); err == nil || !client.IsRetryable(err) {
			break
		}
		sleep(ctx, 100*time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("failover: writer %d: kb.page: %w", w.idx, err)
	}
	w.w = kbcore.NewWindow(snap.Doc, snap.Seq)
	sub, err := w.c.Subscribe(ctx, w.page.id, snap.Seq)
	if err != nil {
		return fmt.Errorf("failover: writer %d: subscribe: %w", w.idx, err)
	}
	w.sub = sub
	w.done = make(chan struct{})
	go w.read()
	return nil
}

// read applies the subscription's events, resubscribing after the
// window's seq whenever a subscription ends, until the writer closes.
func (w *writer) read() {
	defer close(w.done)
	for {
		w.mu.Lock()
		sub := w.sub
		w.mu.Unlock()
		for ev := range sub.Events() {
			w.echo(ev)
		}
		sub.Close()
		backoff := firstBackoff
		for {
			w.mu.Lock()
			closing, after := w.closing, w.w.Seq()
			w.mu.Unlock()
			if closing {
				return
			}
			next, err := w.c.Subscribe(w.ctx, w.page.id, after)
			if err == nil {
				w.mu.Lock()
				if w.closing {
					w.mu.Unlock()
					next.Close()
					return
				}
				w.sub = next
				w.mu.Unlock()
				break
			}
			sleep(w.ctx, backoff)
			backoff = min(2*backoff, maxBackoff)
		}
	}
}

func (w *writer) echo(ev client.Event) {
	w.r.saw(w.page.id, ev.Seq, ev.Cmd.ID)
	w.mu.Lock()
	acts := w.w.Echo(ev.Seq, ev.Cmd)
	w.prune()
	w.mu.Unlock()
	for _, a := range acts {
		if a.Kind == kbcore.ActionRefetch {
			w.refetch()
		}
	}
}

// prune forgets the issue times of commands no longer pending (w.mu held).
func (w *writer) prune() {
	if len(w.issued) == 0 {
		return
	}
	pending := map[string]bool{}
	for _, c := range w.w.Pending() {
		pending[c.ID] = true
	}
	for id := range w.issued {
		if !pending[id] {
			delete(w.issued, id)
		}
	}
}

// refetch gets a snapshot with the outcomes of the pending commands after
// a gap. The command being posted is retried by the posting loop itself.
func (w *writer) refetch() {
	w.mu.Lock()
	var ids []string
	for _, c := range w.w.Pending() {
		ids = append(ids, c.ID)
	}
	w.mu.Unlock()
	backoff := firstBackoff
	for w.ctx.Err() == nil {
		snap, err := w.c.Page(w.ctx, w.page.id, ids)
		if err == nil {
			w.mu.Lock()
			acts := w.w.Snapshot(snap.Doc, snap.Seq, snap.Outcomes)
			w.prune()
			w.mu.Unlock()
			for _, a := range acts {
				if a.Kind == kbcore.ActionToast {
					w.r.rejectedCmd(fmt.Sprintf("writer %d: a refetch reports a pending command rejected: %s", w.idx, a.Code))
				}
			}
			return
		}
		sleep(w.ctx, backoff)
		backoff = min(2*backoff, maxBackoff)
	}
}

// run issues commands until load ends, each posted until it is decided
// or ops ends.
func (w *writer) run(load, ops context.Context) {
	for load.Err() == nil {
		w.reopenIdle(load)
		if load.Err() != nil {
			return
		}
		cmd := w.next()
		w.mu.Lock()
		acts := w.w.Local(cmd)
		send := len(acts) == 1 && acts[0].Kind == kbcore.ActionSend
		if send {
			w.issued[cmd.ID] = time.Now()
		}
		w.mu.Unlock()
		if !send {
			w.r.refusedCmd(fmt.Sprintf("writer %d: its own window refused %s: %v", w.idx, cmd.Type, acts))
			return
		}
		env := kbcore.Envelope{ID: cmd.ID, DeviceID: w.dev, PageID: w.page.id, Type: cmd.Type, Payload: cmd.Payload}
		if !w.post(ops, env, time.Now()) {
			w.mu.Lock()
			w.undecided++
			w.mu.Unlock()
			return
		}
		sleep(load, w.r.cfg.Think)
	}
}

// next draws the writer's next command: a node of its own (after its
// last one), or a new text for one of its nodes. Every command is valid
// whatever the other writers do, so a rejection can only mean a lost
// command or a transient failure answered as a decision.
func (w *writer) next() kbcore.Command {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	id := uuid.NewString()
	if len(w.nodes) == 0 || (w.rng.IntN(10) < 3 && (w.r.cfg.MaxNodes <= 0 || len(w.nodes) < w.r.cfg.MaxNodes)) {
		p := map[string]any{"text": fmt.Sprintf("w%d c%d", w.idx, w.n)}
		if len(w.nodes) > 0 {
			p["after"] = w.nodes[len(w.nodes)-1]
		}
		return kbcore.Command{ID: id, Type: kbcore.TypeCreateAfter, Payload: jsonOf(p)}
	}
	node := w.nodes[w.rng.IntN(len(w.nodes))]
	return kbcore.Command{ID: id, Type: kbcore.TypeEditText, Payload: jsonOf(map[string]any{"node": node, "text": fmt.Sprintf("w%d e%d", w.idx, w.n)})}
}

// post sends env, issued at issued, until the server decides it; false if
// ctx ended first.
func (w *writer) post(ctx context.Context, env kbcore.Envelope, issued time.Time) bool {
	backoff := firstBackoff
	for ctx.Err() == nil {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		from := time.Now()
		a, rej, err := w.c.Submit(actx, env)
		cancel()
		to := time.Now()
		if err != nil && ctx.Err() != nil {
			return false // the run gave up on it: not a failed write
		}
		w.r.attempt(from, to, err)
		switch {
		case err == nil && rej == nil:
			w.r.acked(env.ID, env.PageID, a.Seq, a.Duplicate, issued, to)
			if env.Type == kbcore.TypeCreateAfter {
				w.mu.Lock()
				w.nodes = append(w.nodes, env.ID)
				w.mu.Unlock()
			}
			return true
		case rej != nil:
			w.mu.Lock()
			w.w.Reject(env.ID, rej.Code)
			w.prune()
			w.mu.Unlock()
			w.r.rejectedCmd(fmt.Sprintf("writer %d: %s %s rejected: %s: %s", w.idx, env.Type, env.ID, rej.Code, rej.Message))
			return true
		case !client.IsRetryable(err):
			w.mu.Lock()
			w.w.Reject(env.ID, "refused")
			w.prune()
			w.mu.Unlock()
			w.r.refusedCmd(fmt.Sprintf("writer %d: %s %s: %v", w.idx, env.Type, env.ID, err))
			return true
		}
		sleep(ctx, backoff)
		backoff = min(2*backoff, maxBackoff)
	}
	return false
}

// caughtUp: the window applied its page's log up to head and holds no
// command issued before the promotion still pending.
func (w *writer) caughtUp(head int64, promoted time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.w.Seq() < head || w.w.Awaiting() {
		return false
	}
	for _, at := range w.issued {
		if at.Before(promoted) {
			return false
		}
	}
	return true
}

// settled: the window is at head with nothing pending.
func (w *writer) settled(head int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Seq() == head && len(w.w.Pending()) == 0 && !w.w.Awaiting()
}

// state is the window's seq, server document and number of pending
// commands.
func (w *writer) state() (int64, kbcore.Doc, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Seq(), w.w.Server(), len(w.w.Pending())
}

func (w *writer) close() {
	w.mu.Lock()
	w.closing = true
	sub := w.sub
	w.mu.Unlock()
	w.stop()
	if sub != nil {
		sub.Close()
	}
	if w.done != nil {
		<-w.done
	}
}

func jsonOf(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// requestReopen asks the writer to replace its window by a new one at
// the same state, as a client reopening its page: kbcore.Window keeps
// every own command's inverse for undo without bound, which a soak of
// hours would otherwise count as the generator's growth. The writer does
// it before its next command, once nothing of its own is pending
// (reopenIdle): a window is seldom idle at an arbitrary moment, since
// the echo of a command often arrives after the next one is issued.
func (w *writer) requestReopen() {
	w.mu.Lock()
	w.reopenWanted = true
	w.mu.Unlock()
}

// reopenWait bounds the wait of a requested reopen for the window to have
// nothing pending; past it the writer goes on and tries again before its
// next command.
const reopenWait = time.Second

// reopenIdle does a requested reopen once the window has nothing pending
// and waits for no snapshot (the echo of the last command arrives within
// reopenWait on a healthy link); it returns at once when none is
// requested.
func (w *writer) reopenIdle(ctx context.Context) {
	deadline := time.Now().Add(reopenWait)
	for {
		w.mu.Lock()
		if !w.reopenWanted {
			w.mu.Unlock()
			return
		}
		if w.w != nil && len(w.w.Pending()) == 0 && !w.w.Awaiting() {
			w.w = kbcore.NewWindow(w.w.Server(), w.w.Seq())
			w.reopenWanted = false
			w.reopens++
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		if ctx.Err() != nil || time.Now().After(deadline) {
			return
		}
		sleep(ctx, 2*time.Millisecond)
	}
}
