package server

import (
	"context"
	"errors"
	"sync"

	"github.com/subspace/kbkit/wire"

	"github.com/subspace/kbkit/server/store"
)

// maxCachedDevices bounds the token cache. Past it the cache is not
// complete: a token it lacks is looked up before the unknown-token limit
// may refuse it, so a valid token is still never refused.
const maxCachedDevices = 200000

// authenticate finds the device of a token: UNAUTHORIZED when none has it,
// TOO_MANY_REQUESTS when the token is unknown and the remote address addr
// made too many attempts with unknown tokens. The limit refuses only
// unknown tokens (spec/PROTOCOL.md section 8): a valid token is served from
// the cache, which holds every device while the LISTEN connection is in
// place, and when the cache is not complete a token is looked up before
// the limit is applied.
func (s *Server) authenticate(ctx context.Context, addr, token string) (store.Device, *callError) {
	if token == "" {
		return store.Device{}, errorf(wire.CodeUnauthorized, "missing bearer token (Authorization: Bearer TOKEN, or connectionParams {token} on a WebSocket)")
	}
	s.revoke.start()
	key := store.HashToken(token)
	cache := s.opts.AuthCacheTTL > 0 && s.revoke.ready.Load()
	complete := false
	if cache {
		d, ok, all := s.auth.get(key)
		if ok {
			return d, nil
		}
		complete = all
	}
	if complete {
		// Every device is cached: the token is unknown, or paired a moment
		// ago (its notification on the way). Not looked up once spent.
		if cerr := s.refuseUnknown(addr); cerr != nil {
			return store.Device{}, cerr
		}
	}
	gen := s.revoke.gen.Load()
	s.metrics.tokenLookups.Inc()
	ctx, cancel := s.dbContext(ctx) // a lookup is database work too
	defer cancel()
	d, err := s.st.Authenticate(ctx, token)
	if err != nil {
		if !errors.Is(err, store.ErrUnauthorized) {
			return store.Device{}, storeError(err)
		}
		if !complete {
			if cerr := s.refuseUnknown(addr); cerr != nil {
				return store.Device{}, cerr
			}
		}
		s.authGuard.failed(addr)
		return store.Device{}, errorf(wire.CodeUnauthorized, "unknown device token")
	}
	if cache && s.revoke.gen.Load() == gen {
		s.auth.put(key, d)
	}
	return d, nil
}

// refuseUnknown answers TOO_MANY_REQUESTS when addr has spent its
// unknown-token attempts.
func (s *Server) refuseUnknown(addr string) *callError {
	cerr := s.authGuard.check(addr)
	if cerr != nil {
		s.metrics.refused.WithLabelValues("auth_failures").Inc()
	}
	return cerr
}

// authCache maps token hashes to devices. complete says it holds every
// device (loaded when the LISTEN connection was set up, kept by the
// pairing and revocation notifications since).
type authCache struct {
	mu       sync.Mutex
	m        map[store.TokenHash]store.Device
	complete bool
}

func (c *authCache) get(key store.TokenHash) (d store.Device, ok, complete bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok = c.m[key]
	return d, ok, c.complete
}

func (c *authCache) put(key store.TokenHash, d store.Device) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[store.TokenHash]store.Device{}
	}
	if _, ok := c.m[key]; !ok && len(c.m) >= maxCachedDevices {
		c.complete = false
		return
	}
	c.m[key] = d
}

// load replaces the cache with every device of st.
func (c *authCache) load(ctx context.Context, st *store.Store) error {
	m := map[store.TokenHash]store.Device{}
	complete, err := st.Devices(ctx, maxCachedDevices, func(h store.TokenHash, d store.Device) { m[h] = d })
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m, c.complete = m, complete
	return nil
}

func (c *authCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m, c.complete = nil, false
}

func (c *authCache) dropDevice(deviceID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, d := range c.m {
		if d.DeviceID == deviceID {
			delete(c.m, k)
		}
	}
}

// dbContext bounds database work done outside a call by Options.DBTimeout.
func (s *Server) dbContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.opts.DBTimeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, s.opts.DBTimeout)
}

// pageWorkspace is store.PageWorkspace within Options.DBTimeout.
func (s *Server) pageWorkspace(ctx context.Context, pageID string) (string, error) {
	ctx, cancel := s.dbContext(ctx)
	defer cancel()
	return s.st.PageWorkspace(ctx, pageID)
}
