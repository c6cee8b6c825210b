package server

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/subspace/kbkit/server/store"
)

// revocations LISTENs on store.RevokeChannel and store.PairChannel: a
// paired device joins the token cache (tokens.go), a revoked device is dropped
// from the auth cache and its open WebSockets are closed (1008 "device
// revoked") on every instance, within the notification's latency. The
// auth cache is used only while the LISTEN is in place; when it is lost,
// the cache is cleared, and once it is back the devices of the open
// sockets are checked again (notifications may have been missed).
type revocations struct {
	s     *Server
	once  sync.Once
	ready atomic.Bool
	// gen counts revocations: an authentication that raced with one does
	// not fill the cache.
	gen atomic.Int64
}

func (v *revocations) start() { v.once.Do(func() { go v.run(v.s.baseCtx) }) }

func (v *revocations) run(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for {
		err := v.listen(ctx)
		v.ready.Store(false)
		v.s.auth.clear()
		if ctx.Err() != nil {
			return
		}
		v.s.log.Warn("revocations: listen connection lost", "err", err)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (v *revocations) listen(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, v.s.st.Pool().Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, ch := range []string{store.RevokeChannel, store.PairChannel} {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return err
		}
	}
	dctx, cancel := v.s.dbContext(ctx)
	defer cancel()
	if err := v.recheck(dctx); err != nil {
		return err
	}
	if v.s.opts.AuthCacheTTL > 0 {
		if err := v.s.auth.load(dctx, v.s.st); err != nil {
			return err
		}
	}
	v.ready.Store(true)
	for {
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second) // a partition is noticed within 2 s + 2 s
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil || !pgconn.Timeout(err) || conn.IsClosed() {
				return err
			}
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			err = conn.Ping(pctx)
			cancel()
			if err != nil {
				return err
			}
			continue
		}
		if n.Channel == store.PairChannel {
			v.s.paired(n.Payload)
			continue
		}
		v.s.revoked(n.Payload)
	}
}

// recheck closes the open sockets whose device no longer exists.
func (v *revocations) recheck(ctx context.Context) error {
	v.s.mu.Lock()
	var ids []string
	for c := range v.s.conns {
		if id := c.deviceID(); id != "" {
			ids = append(ids, id)
		}
	}
	v.s.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	exist, err := v.s.st.DevicesExist(ctx, ids)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if !exist[id] {
			v.s.revoked(id)
		}
	}
	return nil
}

// revoked drops a device from the auth cache and closes its WebSockets.
func (s *Server) revoked(deviceID string) {
	s.revoke.gen.Add(1)
	s.auth.dropDevice(deviceID)
	s.mu.Lock()
	var conns []*wsConn
	for c := range s.conns {
		if c.deviceID() == deviceID {
			conns = append(conns, c)
		}
	}
	s.mu.Unlock()
	if len(conns) > 0 {
		s.log.Info("device revoked: closing its WebSockets", "device_id", deviceID, "websockets", len(conns))
	}
	for _, c := range conns {
		go c.closeWith(websocket.StatusPolicyViolation, "device revoked")
	}
}

// paired adds a device paired on any instance to the token cache.
func (s *Server) paired(payload string) {
	h, d, err := store.ParsePaired(payload)
	if err != nil {
		s.log.Warn("paired notification ignored", "err", err)
		return
	}
	s.auth.put(h, d)
}
