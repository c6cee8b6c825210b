package pgfault

import (
	"context"
	"encoding/json"
	"errors"
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

// writer is one editor: a device with a client.Window on its page (its
// own kb.onPage subscription), sending one command at a time, each sent
// again with the same id until it is decided, as spec/window.md says.
// The window does the editing; the writer, as its observer, reports to
// the run what the failover is judged on: every kb.command attempt's
// times, every committed answer with its seq, every event's (page, seq,
// id), and the rejections.
type writer struct {
	client.NopObserver
	r    *run
	idx  int
	c    *client.Client
	dev  string
	page *page
	rng  *rand.Rand
	cw   *client.Window // set by open

	mu     sync.Mutex
	issued map[string]time.Time // when each pending command was issued
	// sending is the command being posted, issued at sendingAt.
	sending   string
	sendingAt time.Time
	nodes     []string // own nodes, once their create-after committed
	n         int
	// undecided: commands still undecided when the settle time ran out.
	undecided int
	// reopenWanted: a reopen was requested and not done yet; reopens:
	// how many were done (requestReopen).
	reopenWanted bool
	reopens      int
}

func newWriter(r *run, idx int, c *client.Client, dev string, p *page) *writer {
	return &writer{r: r, idx: idx, c: c, dev: dev, page: p, issued: map[string]time.Time{},
		rng: rand.New(rand.NewPCG(uint64(r.cfg.Seed), uint64(idx)))}
}

// open opens the writer's window: a snapshot, then the subscription after
// its seq, resubscribed whenever it ends until the writer closes.
func (w *writer) open(ctx context.Context) error {
	cw, err := client.OpenWindow(ctx, w.c, w.page.id, client.WindowOptions{DeviceID: w.dev, Observer: w,
		AttemptTimeout: attemptTimeout, Backoff: client.Doubling(firstBackoff, maxBackoff)})
	if err != nil {
		return fmt.Errorf("failover: writer %d: %w", w.idx, err)
	}
	w.cw = cw
	return nil
}

// ---- the window's observer ----

// Event: a client was told (page, seq) holds the event's command.
func (w *writer) Event(ev client.Event, _ bool, _ time.Time) {
	w.r.saw(w.page.id, ev.Seq, ev.Cmd.ID)
}

// Attempt records one kb.command call, and a committed answer with its
// seq. An attempt the run gave up on (its context ended) is not a failed
// write.
func (w *writer) Attempt(a client.Attempt) {
	if a.Abandoned {
		return
	}
	w.r.attempt(a.From, a.To, a.Err)
	if !a.Committed() {
		return
	}
	w.mu.Lock()
	issued, ok := w.issued[a.Env.ID]
	if a.Env.ID == w.sending {
		issued, ok = w.sendingAt, true
	}
	w.mu.Unlock()
	if !ok {
		issued = a.From
	}
	w.r.acked(a.Env.ID, a.Env.PageID, a.Ack.Seq, a.Ack.Duplicate, issued, a.To)
}

// Rejected: a refetch found a pending command rejected.
func (w *writer) Rejected(id, code string) {
	w.r.rejectedCmd(fmt.Sprintf("writer %d: a refetch reports a pending command rejected: %s", w.idx, code))
}

// ---- the load ----

// run issues commands until load ends, each posted until it is decided
// or ops ends.
func (w *writer) run(load, ops context.Context) {
	for load.Err() == nil {
		w.reopenIdle(load)
		if load.Err() != nil {
			return
		}
		cmd := w.next()
		env, code, ok := w.cw.Local(func(kbcore.Doc) kbcore.Command { return cmd })
		if !ok {
			w.r.refusedCmd(fmt.Sprintf("writer %d: its own window refused %s: %s", w.idx, cmd.Type, code))
			return
		}
		w.mu.Lock()
		w.issued[cmd.ID] = time.Now()
		w.sending, w.sendingAt = cmd.ID, w.issued[cmd.ID]
		w.mu.Unlock()
		_, rej, err := w.cw.Send(ops, env)
		w.mu.Lock()
		w.sending = ""
		w.mu.Unlock()
		switch {
		case err == nil && rej == nil:
			if env.Type == kbcore.TypeCreateAfter {
				w.mu.Lock()
				w.nodes = append(w.nodes, env.ID)
				w.mu.Unlock()
			}
		case rej != nil:
			w.r.rejectedCmd(fmt.Sprintf("writer %d: %s %s rejected: %s: %s", w.idx, env.Type, env.ID, rej.Code, rej.Message))
		case ops.Err() != nil && !errors.Is(err, client.ErrNotPending):
			w.mu.Lock()
			w.undecided++ // the run gave up on it: not a failed write
			w.mu.Unlock()
			return
		default: // neither a decision nor retryable
			w.r.refusedCmd(fmt.Sprintf("writer %d: %s %s: %v", w.idx, env.Type, env.ID, err))
		}
		w.prune()
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

// prune forgets the issue times of the commands no longer pending.
func (w *writer) prune() {
	ids, _ := w.cw.Pending()
	pending := map[string]bool{}
	for _, id := range ids {
		pending[id] = true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for id := range w.issued {
		if !pending[id] {
			delete(w.issued, id)
		}
	}
}

// caughtUp: the window applied its page's log up to head and holds no
// command issued before the promotion still pending.
func (w *writer) caughtUp(head int64, promoted time.Time) bool {
	ids, awaiting := w.cw.Pending()
	if awaiting || w.cw.Seq() < head {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		if at, ok := w.issued[id]; ok && at.Before(promoted) {
			return false
		}
	}
	return true
}

// settled: the window is at head with nothing pending.
func (w *writer) settled(head int64) bool {
	return w.cw.Seq() == head && w.cw.Converged(head)
}

// state is the window's seq, server document and number of pending
// commands.
func (w *writer) state() (int64, kbcore.Doc, int) {
	ids, _ := w.cw.Pending()
	doc, seq := w.cw.Server()
	return seq, doc, len(ids)
}

func (w *writer) close() {
	if w.cw != nil {
		w.cw.Close()
	}
}

func jsonOf(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// requestReopen asks the writer to reopen its window at the same state
// (client.Window.Reopen), as a client reopening its page: kbcore.Window
// keeps every own command's inverse for undo without bound, which a soak
// of hours would otherwise count as the generator's growth. The writer
// does it before its next command, once nothing of its own is pending
// (reopenIdle): a window is seldom idle at an arbitrary moment, since the
// echo of a command often arrives after the next one is issued.
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
		wanted := w.reopenWanted
		w.mu.Unlock()
		if !wanted {
			return
		}
		if w.cw.Reopen() {
			w.mu.Lock()
			w.reopenWanted = false
			w.reopens++
			w.mu.Unlock()
			return
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return
		}
		sleep(ctx, 2*time.Millisecond)
	}
}
