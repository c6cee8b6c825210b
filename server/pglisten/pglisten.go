package pglisten

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// AppName is the application_name of the LISTEN connection.
const AppName = "kbkit-listen"

// Timing of the connection.
const (
	PingEvery      = 2 * time.Second
	PingTimeout    = 2 * time.Second
	ConnectTimeout = 10 * time.Second
	MinBackoff     = 50 * time.Millisecond
	MaxBackoff     = 5 * time.Second
)

// Handler handles one or more channels. Notify must not block: it runs on the
// listener's goroutine, before the next notification of any channel.
type Handler interface {
	// Backlog runs after every (re)connect once every channel of the
	// handler is listened on, before their notifications; an error drops
	// the connection (it is opened again).
	Backlog(ctx context.Context) error
	// Notify handles one notification.
	Notify(n *pgconn.Notification)
	// Lost says the connection was lost (or the listener stopped):
	// notifications may be missed until the next Backlog.
	Lost(err error)
}

// Listener holds the connection. Handlers may be added while it runs:
// their channels are listened on at once.
type Listener struct {
	config func() *pgx.ConnConfig
	log    *slog.Logger

	// BeforeConnect, if set, is called before each connection attempt (a
	// test hook); set it before Run.
	BeforeConnect func()

	mu     sync.Mutex
	all    []added
	byChan map[string][]Handler
	added  []added // handlers added since the connection last took them
	// interrupt ends the current wait for a notification (Handle calls
	// it, so that a new channel is listened on at once).
	interrupt context.CancelFunc
}

type added struct {
	channels []string
	h        Handler
}

// New returns a listener connecting with config (a fresh copy per call).
func New(config func() *pgx.ConnConfig, log *slog.Logger) *Listener {
	if log == nil {
		log = slog.Default()
	}
	return &Listener{config: config, log: log, byChan: map[string][]Handler{}}
}

// Handle adds h for channels.
func (l *Listener) Handle(h Handler, channels ...string) {
	l.mu.Lock()
	a := added{channels, h}
	l.all = append(l.all, a)
	for _, ch := range channels {
		l.byChan[ch] = append(l.byChan[ch], h)
	}
	l.added = append(l.added, a)
	if l.interrupt != nil {
		l.interrupt()
	}
	l.mu.Unlock()
}

// Run listens until ctx is done and returns ctx.Err(). Every handler is
// told Lost whenever a connection ends or cannot be opened, the last time
// included.
func (l *Listener) Run(ctx context.Context) error {
	backoff := MinBackoff
	for ctx.Err() == nil {
		conn, err := l.connect(ctx)
		if err == nil {
			connected := time.Now()
			err = l.serve(ctx, conn)
			cctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = conn.Close(cctx)
			cancel()
			if time.Since(connected) > 10*MaxBackoff {
				backoff = MinBackoff
			}
		}
		l.lost(err)
		if ctx.Err() != nil {
			break
		}
		l.log.Warn("listen: connection lost", "err", err, "retry_in", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		backoff = min(2*backoff, MaxBackoff)
	}
	return ctx.Err()
}

func (l *Listener) connect(ctx context.Context) (*pgx.Conn, error) {
	if l.BeforeConnect != nil {
		l.BeforeConnect()
	}
	cfg := l.config()
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["application_name"] = AppName
	cctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	return pgx.ConnectConfig(cctx, cfg)
}

func (l *Listener) lost(err error) {
	l.mu.Lock()
	all := l.all
	l.mu.Unlock()
	for _, a := range all {
		a.h.Lost(err)
	}
}

// take LISTENs on the channels of the handlers not yet taken by conn (all
// of them on a new connection) and runs their backlogs.
func (l *Listener) take(ctx context.Context, conn *pgx.Conn, fresh bool) error {
	l.mu.Lock()
	var todo []added
	if fresh {
		todo = l.all
	} else {
		todo = l.added
	}
	l.added = nil
	l.mu.Unlock()
	listening := map[string]bool{}
	for _, a := range todo {
		for _, ch := range a.channels {
			if listening[ch] {
				continue
			}
			lctx, cancel := context.WithTimeout(ctx, PingTimeout)
			_, err := conn.Exec(lctx, "LISTEN "+pgx.Identifier{ch}.Sanitize())
			cancel()
			if err != nil {
				l.requeue(todo, fresh)
				return fmt.Errorf("LISTEN %s: %w", ch, err)
			}
			listening[ch] = true
		}
	}
	for _, a := range todo {
		if err := a.h.Backlog(ctx); err != nil {
			return fmt.Errorf("backlog (%v): %w", a.channels, err)
		}
	}
	return nil
}

// requeue puts back handlers whose channel a failed connection did not
// take (a fresh connection takes every handler anyway).
func (l *Listener) requeue(todo []added, fresh bool) {
	if fresh {
		return
	}
	l.mu.Lock()
	l.added = append(todo, l.added...)
	l.mu.Unlock()
}

// serve handles notifications until the connection fails or ctx is done;
// an idle connection is pinged every PingEvery.
func (l *Listener) serve(ctx context.Context, conn *pgx.Conn) error {
	if err := l.take(ctx, conn, true); err != nil {
		return err
	}
	for {
		wctx, cancel := context.WithTimeout(ctx, PingEvery)
		l.mu.Lock()
		pending := len(l.added) > 0
		if !pending {
			l.interrupt = cancel
		}
		l.mu.Unlock()
		var n *pgconn.Notification
		err := context.Canceled
		if !pending {
			n, err = conn.WaitForNotification(wctx)
		}
		l.mu.Lock()
		l.interrupt = nil
		l.mu.Unlock()
		interrupted := pending || (wctx.Err() == context.Canceled && ctx.Err() == nil)
		cancel()
		if err == nil {
			l.notify(n)
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if conn.IsClosed() || !(pgconn.Timeout(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			return err
		}
		if interrupted {
			if err := l.take(ctx, conn, false); err != nil {
				return err
			}
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, PingTimeout)
		err = conn.Ping(pctx)
		cancel()
		if err != nil {
			return fmt.Errorf("ping: %w", err)
		}
	}
}

func (l *Listener) notify(n *pgconn.Notification) {
	l.mu.Lock()
	hs := l.byChan[n.Channel]
	l.mu.Unlock()
	for _, h := range hs {
		h.Notify(n)
	}
}
