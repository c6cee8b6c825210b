package server

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/coder/websocket"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/subspace/kbkit/server/store"
)

// revocations is the handler of store.RevokeChannel and store.PairChannel
// on the server's LISTEN connection (pglisten): a paired device joins the
// token cache (tokens.go), a revoked device is dropped from the auth cache
// and its open WebSockets are closed (1008 "device revoked") on every
// instance, within the notification's latency. The auth cache is used
// only while the LISTEN is in place; when it is lost, the cache is
// cleared, and once it is back the devices of the open sockets are
// checked again (notifications may have been missed).
type revocations struct {
	s     *Server
	once  sync.Once
	ready atomic.Bool
	// gen counts revocations: an authentication that raced with one does
	// not fill the cache.
	gen atomic.Int64
}

func (v *revocations) start() {
	v.once.Do(func() { v.s.listen(v, store.RevokeChannel, store.PairChannel) })
}

// Backlog checks the open sockets' devices again and loads the auth
// cache; then the cache is used.
func (v *revocations) Backlog(ctx context.Context) error {
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
	return nil
}

func (v *revocations) Notify(n *pgconn.Notification) {
	if n.Channel == store.PairChannel {
		v.s.paired(n.Payload)
		return
	}
	v.s.revoked(n.Payload)
}

// Lost stops the cache's use until the next Backlog.
func (v *revocations) Lost(error) {
	v.ready.Store(false)
	v.s.auth.clear()
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
