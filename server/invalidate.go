package server

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/server/store"
)

// invalidator feeds kb.onInvalidate: a handler of the server's LISTEN
// connection (pglisten) on the store's commit notifications (every
// instance gets every commit), it tells subscribers of the workspace which
// non-document topic changed. Invalidations are hints to refetch, so they
// may be coalesced or dropped when a subscriber is behind; after a lost
// listen connection everyone is told to refetch. It starts with the first
// subscriber.
type invalidator struct {
	s *Server

	mu      sync.Mutex
	subs    map[*invSub]struct{}
	started bool
	// ready closes once the LISTEN is in place: a subscription is
	// acknowledged only after it, so no commit after "started" is missed.
	ready     chan struct{}
	readyOnce sync.Once
	backlogs  int // Backlog calls: each after the first follows a loss

	// notes are the notified payloads, read by work (which reads the log:
	// the listener's goroutine must not wait on it); overflow says some
	// were dropped.
	notes    chan string
	overflow atomic.Bool
}

type invSub struct {
	ws     string
	topics map[string]bool
	ch     chan Invalidation
}

func newInvalidator(s *Server) *invalidator {
	return &invalidator{s: s, subs: map[*invSub]struct{}{}, ready: make(chan struct{}), notes: make(chan string, 256)}
}

func (v *invalidator) subscribe(ws string, topics map[string]bool) *invSub {
	sub := &invSub{ws: ws, topics: topics, ch: make(chan Invalidation, 16)}
	v.mu.Lock()
	v.subs[sub] = struct{}{}
	start := !v.started
	v.started = true
	v.mu.Unlock()
	if start {
		go v.work(v.s.baseCtx)
		v.s.listen(v, store.NotifyChannel)
	}
	select { // bounded: a database that is down must not hang the socket
	case <-v.ready:
	case <-time.After(5 * time.Second):
	case <-v.s.baseCtx.Done():
	}
	return sub
}

func (v *invalidator) unsubscribe(sub *invSub) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.subs, sub)
}

// publish tells the subscribers of workspace ws ("" = every workspace).
func (v *invalidator) publish(ws string, inv Invalidation) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for sub := range v.subs {
		if (ws == "" || sub.ws == ws) && sub.topics[inv.Topic] {
			select {
			case sub.ch <- inv:
			default: // behind: the invalidations it has queued say the same
			}
		}
	}
}

func (v *invalidator) count() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.subs)
}

// Backlog: once listening again after a loss, everyone refetches
// (notifications may have been missed meanwhile).
func (v *invalidator) Backlog(context.Context) error {
	v.mu.Lock()
	v.backlogs++
	again := v.backlogs > 1
	v.mu.Unlock()
	if again {
		v.publish("", Invalidation{Topic: TopicDirectory})
	}
	v.readyOnce.Do(func() { close(v.ready) })
	return nil
}

func (v *invalidator) Notify(n *pgconn.Notification) {
	if v.count() == 0 {
		return
	}
	select {
	case v.notes <- n.Payload:
	default:
		v.overflow.Store(true)
	}
}

func (v *invalidator) Lost(error) {}

// work reads the notified commands; a dropped notification makes everyone
// refetch.
func (v *invalidator) work(ctx context.Context) {
	for {
		var payload string
		select {
		case <-ctx.Done():
			return
		case payload = <-v.notes:
		}
		if v.overflow.Swap(false) {
			v.publish("", Invalidation{Topic: TopicDirectory})
		}
		v.note(ctx, payload)
	}
}

// note publishes the invalidations of one notification's page heads
// (store.NotifyHeads): of each head whose command changed the directory.
func (v *invalidator) note(ctx context.Context, payload string) {
	store.NotifyHeads(payload, func(pageID string, seq int64) { v.noteHead(ctx, pageID, seq) })
}

// noteHead publishes the invalidation of the command at seq of pageID if
// it changes the directory.
func (v *invalidator) noteHead(ctx context.Context, pageID string, seq int64) {
	lctx, cancel := v.s.dbContext(ctx)
	entries, err := v.s.st.Log(lctx, pageID, seq-1, 1)
	cancel()
	if err != nil || len(entries) == 0 || entries[0].Seq != seq || !kbcore.ChangesDirectory(entries[0].Cmd.Type) {
		if err != nil {
			v.s.log.Debug("invalidations: reading a notified command", "page_id", pageID, "seq", seq, "err", err)
		}
		return
	}
	ws, err := v.s.pageWorkspace(ctx, pageID)
	if err != nil {
		return
	}
	v.publish(ws, Invalidation{Topic: TopicDirectory, PageID: pageID, Seq: seq})
}

// logCall logs one tRPC call: successes and refusals (4xx) at debug (a
// refusal's message may echo the client's input, and a hostile client
// must not be able to fill the log at info), failures (5xx) at warn.
func (s *Server) logCall(ctx context.Context, transport, path, device string, err *callError, d time.Duration) {
	level := slog.LevelDebug
	if err != nil && err.status() >= 500 {
		level = slog.LevelWarn
	}
	if !s.log.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{slog.String("transport", transport), slog.String("path", path),
		slog.String("device_id", device), slog.Duration("duration", d)}
	if err != nil {
		attrs = append(attrs, slog.String("code", err.code), slog.String("message", err.message))
	}
	s.log.LogAttrs(ctx, level, "trpc call", attrs...)
}
