package server

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/subspace/kbkit/wire"
)

// Limits bound what one client can hold or cost (spec/PROTOCOL.md section
// 8). A zero field takes its default; a negative one turns the limit off.
type Limits struct {
	// BodyTimeout bounds reading a request's headers and body (default
	// 30s); past it the request is answered 408 TIMEOUT and the connection
	// closed.
	BodyTimeout time.Duration
	// IdleTimeout closes a keep-alive HTTP connection without a request
	// (default 120s). It is applied by HTTPServer.
	IdleTimeout time.Duration
	// ParamsTimeout bounds the wait for the first message of a
	// ?connectionParams=1 WebSocket (default 30s); past it the socket is
	// closed with 1008.
	ParamsTimeout time.Duration
	// MaxConnections caps the open TCP connections of the listener wrapped
	// by Listener (default 10000); past it a connection gets 503 and is
	// closed.
	MaxConnections int
	// MaxSubscriptionsPerSocket (default 1000) and
	// MaxSubscriptionsPerDevice (default 10000, over all the device's
	// sockets on this instance) cap open subscriptions.
	MaxSubscriptionsPerSocket int
	MaxSubscriptionsPerDevice int
	// MaxBatch caps the calls of one HTTP batch or WebSocket message array
	// (default 100).
	MaxBatch int
	// AuthFailures is how many unknown-token attempts one remote address
	// may make per minute (default 30, in bursts of as many); past it,
	// 429 with Retry-After, and the token is not even looked up.
	AuthFailures int
	// MaxInflight is how many calls an instance runs at once (default 64)
	// and MaxQueue how many more wait for a slot (default 1024);
	// past both, 503 SERVICE_UNAVAILABLE with Retry-After (admission
	// control: bounded latency instead of an unbounded queue).
	MaxInflight int
	MaxQueue    int
	// QueueTimeout is the longest a call waits for a slot (default
	// 500ms); past it, the same 503. It bounds the latency of the calls
	// that are admitted: a queue is only worth the wait it costs.
	QueueTimeout time.Duration
}

// DefaultLimits are the reference server's defaults.
var DefaultLimits = Limits{
	BodyTimeout:               30 * time.Second,
	IdleTimeout:               30 * time.Second, // PROTOCOL.md 8: every timeout at most 30 s
	ParamsTimeout:             30 * time.Second,
	MaxConnections:            10000,
	MaxSubscriptionsPerSocket: 1000,
	MaxSubscriptionsPerDevice: 10000,
	MaxBatch:                  100,
	AuthFailures:              30,
	MaxInflight:               64,
	MaxQueue:                  1024,
	QueueTimeout:              500 * time.Millisecond,
}

// withDefaults fills zero fields from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	pick := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	pickN := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	pick(&l.BodyTimeout, d.BodyTimeout)
	pick(&l.IdleTimeout, d.IdleTimeout)
	pick(&l.ParamsTimeout, d.ParamsTimeout)
	pickN(&l.MaxConnections, d.MaxConnections)
	pickN(&l.MaxSubscriptionsPerSocket, d.MaxSubscriptionsPerSocket)
	pickN(&l.MaxSubscriptionsPerDevice, d.MaxSubscriptionsPerDevice)
	pickN(&l.MaxBatch, d.MaxBatch)
	pickN(&l.AuthFailures, d.AuthFailures)
	pickN(&l.MaxInflight, d.MaxInflight)
	pickN(&l.MaxQueue, d.MaxQueue)
	pick(&l.QueueTimeout, d.QueueTimeout)
	return l
}

// Text limits of the schemas (spec/schema/common.schema.json), in
// characters, advertised by kb.limits.
const (
	MaxTitleChars = 1000
	MaxAliases    = 100
)

func ms(d time.Duration) int64 {
	if d < 0 {
		return 0
	}
	return d.Milliseconds()
}

func count(n int) int { return max(n, 0) }

// limitsResult is kb.limits' answer.
func (s *Server) limitsResult() wire.Limits {
	l := s.opts.Limits
	return wire.Limits{
		MaxBody:                   s.opts.MaxBody,
		BodyTimeoutMS:             ms(l.BodyTimeout),
		IdleTimeoutMS:             ms(l.IdleTimeout),
		ParamsTimeoutMS:           ms(l.ParamsTimeout),
		WriteTimeoutMS:            ms(s.opts.WriteTimeout),
		MaxConnections:            count(l.MaxConnections),
		MaxSubscriptionsPerSocket: count(l.MaxSubscriptionsPerSocket),
		MaxSubscriptionsPerDevice: count(l.MaxSubscriptionsPerDevice),
		MaxBatch:                  count(l.MaxBatch),
		MaxSocketQueue:            maxQueued,
		AuthFailuresPerMinute:     count(l.AuthFailures),
		MaxInflight:               count(l.MaxInflight),
		MaxQueue:                  count(l.MaxQueue),
		QueueTimeoutMS:            ms(l.QueueTimeout),
		MaxTitleChars:             MaxTitleChars,
		MaxAliases:                MaxAliases,
		MaxPending:                maxPending,
		RateLimitPerSecond:        s.opts.RateLimit.PerSecond,
		RateBurst:                 s.limiter.size(),
	}
}

// HTTPServer returns an http.Server serving s with the limits that belong
// to the listener side: header read timeout (BodyTimeout) and idle timeout.
func (s *Server) HTTPServer() *http.Server {
	hs := &http.Server{Handler: s}
	if t := s.opts.Limits.BodyTimeout; t > 0 {
		hs.ReadHeaderTimeout = t
	}
	if t := s.opts.Limits.IdleTimeout; t > 0 {
		hs.IdleTimeout = t
	}
	return hs
}

// Listener caps the open connections of ln at Limits.MaxConnections: a
// connection past the cap is answered 503 with Retry-After and closed, so
// that a client learns it at once instead of hanging in the backlog.
func (s *Server) Listener(ln net.Listener) net.Listener {
	n := s.opts.Limits.MaxConnections
	if n <= 0 {
		return ln
	}
	return &capListener{Listener: ln, max: int64(n), s: s}
}

type capListener struct {
	net.Listener
	max  int64
	open atomic.Int64
	s    *Server
}

var overCapAnswer = []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")

func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) > l.max {
			l.open.Add(-1)
			l.s.metrics.refused.WithLabelValues("connections").Inc()
			go func() {
				_ = c.SetWriteDeadline(time.Now().Add(time.Second))
				_, _ = c.Write(overCapAnswer)
				_ = c.Close()
			}()
			continue
		}
		return &capConn{Conn: c, l: l}, nil
	}
}

type capConn struct {
	net.Conn
	l    *capListener
	once sync.Once
}

func (c *capConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}

// ---- unknown tokens per remote address ----

// authGuard limits unknown-token attempts per remote address: a token
// bucket of AuthFailures per minute. Only failures take a token; an
// address with an empty bucket is refused before its token is looked up.
type authGuard struct {
	perMinute float64
	buckets   *bucketMap
}

func newAuthGuard(perMinute int, now func() time.Time) *authGuard {
	pm := float64(perMinute)
	return &authGuard{perMinute: pm, buckets: newBucketMap(pm, pm, time.Minute, now)}
}

// check answers TOO_MANY_REQUESTS when addr has no attempt left.
func (g *authGuard) check(addr string) *callError {
	if g == nil || g.perMinute <= 0 {
		return nil
	}
	ok, wait := g.buckets.take(addr, false)
	if ok {
		return nil
	}
	return &callError{code: wire.CodeTooManyRequests, message: "too many unknown tokens from this address",
		retryable: true, retryAfter: wait}
}

// failed takes one attempt of addr.
func (g *authGuard) failed(addr string) {
	if g == nil || g.perMinute <= 0 {
		return
	}
	g.buckets.spend(addr)
}

// remoteHost is the address part of a request's remote address.
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// ---- admission control ----

// admission runs at most MaxInflight calls at once and lets at most
// MaxQueue more wait; past that a call is refused at once with 503 and
// Retry-After, so overload costs clients a retry instead of unbounded
// latency and server memory.
type admission struct {
	slots   chan struct{}
	queue   int64
	queued  atomic.Int64
	timeout time.Duration
}

func newAdmission(l Limits) *admission {
	if l.MaxInflight <= 0 {
		return nil
	}
	return &admission{slots: make(chan struct{}, l.MaxInflight), queue: int64(max(l.MaxQueue, 0)), timeout: l.QueueTimeout}
}

var errOverloaded = &callError{code: wire.CodeServiceUnavailable, message: "server overloaded, retry the same call",
	retryable: true, retryAfter: time.Second}

// admit waits for a slot, at most QueueTimeout; release must be called
// once the call is done.
func (a *admission) admit(ctx context.Context) (release func(), cerr *callError) {
	if a == nil {
		return func() {}, nil
	}
	select {
	case a.slots <- struct{}{}:
		return a.release, nil
	default:
	}
	if a.queued.Add(1) > a.queue {
		a.queued.Add(-1)
		return nil, errOverloaded
	}
	defer a.queued.Add(-1)
	var expired <-chan time.Time
	if a.timeout > 0 {
		t := time.NewTimer(a.timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case a.slots <- struct{}{}:
		return a.release, nil
	case <-expired:
		return nil, errOverloaded
	case <-ctx.Done():
		return nil, errOverloaded
	}
}

func (a *admission) release() { <-a.slots }

// retryAfterHeader formats a Retry-After value in whole seconds (at least 1).
func retryAfterHeader(d time.Duration) string {
	return strconv.Itoa(max(1, int((d+time.Second-1)/time.Second)))
}
