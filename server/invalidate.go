package server

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/server/store"
)

// invalidator feeds kb.onInvalidate: it LISTENs on the store's commit
// notifications (every instance gets every commit) and tells subscribers
// of the workspace which non-document topic changed. Invalidations are
// hints to refetch, so they may be coalesced or dropped when a
// subscriber is behind; after a lost listen connection everyone is told
// to refetch. It starts with the first subscriber.
type invalidator struct {
	s *Server

	mu      sync.Mutex
	subs    map[*invSub]struct{}
	started bool
	// ready closes once the first LISTEN is in place: a subscription is
	// acknowledged only after it, so no commit after "started" is missed.
	ready     chan struct{}
	readyOnce sync.Once
}

type invSub struct {
	ws     string
	topics map[string]bool
	ch     chan Invalidation
}

func newInvalidator(s *Server) *invalidator {
	return &invalidator{s: s, subs: map[*invSub]struct{}{}, ready: make(chan struct{})}
}

func (v *invalidator) subscribe(ws string, topics map[string]bool) *invSub {
	sub := &invSub{ws: ws, topics: topics, ch: make(chan Invalidation, 16)}
	v.mu.Lock()
	v.subs[sub] = struct{}{}
	if !v.started {
		v.started = true
		go v.run(v.s.baseCtx)
	}
	v.mu.Unlock()
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

func (v *invalidator) run(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for {
		err := v.listen(ctx)
		if ctx.Err() != nil {
			return
		}
		v.s.log.Warn("invalidations: listen connection lost", "err", err)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return
		}
		backoff = min(2*backoff, 5*time.Second)
		// Notifications may have been missed meanwhile.
		v.publish("", Invalidation{Topic: TopicDirectory})
	}
}

func (v *invalidator) listen(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, v.s.st.Pool().Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{store.NotifyChannel}.Sanitize()); err != nil {
		return err
	}
	v.readyOnce.Do(func() { close(v.ready) })
	for {
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second) // a partition is noticed within 2 s + 2 s
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil || !pgconn.Timeout(err) || conn.IsClosed() {
				return err
			}
			// Idle: check the connection is alive.
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			err = conn.Ping(pctx)
			cancel()
			if err != nil {
				return err
			}
			continue
		}
		if v.count() == 0 {
			continue
		}
		// The payload is "<page id>:<seq>".
		i := strings.LastIndexByte(n.Payload, ':')
		if i < 0 {
			continue
		}
		pageID := n.Payload[:i]
		seq, err := strconv.ParseInt(n.Payload[i+1:], 10, 64)
		if err != nil {
			continue
		}
		lctx, cancel := v.s.dbContext(ctx)
		entries, err := v.s.st.Log(lctx, pageID, seq-1, 1)
		cancel()
		if err != nil || len(entries) == 0 || entries[0].Seq != seq || !kbcore.ChangesDirectory(entries[0].Cmd.Type) {
			if err != nil {
				v.s.log.Debug("invalidations: reading a notified command", "page_id", pageID, "seq", seq, "err", err)
			}
			continue
		}
		ws, err := v.s.pageWorkspace(ctx, pageID)
		if err != nil {
			continue
		}
		v.publish(ws, Invalidation{Topic: TopicDirectory, PageID: pageID, Seq: seq})
	}
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
