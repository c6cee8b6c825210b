package server

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/subspace/kbkit/server/pglisten"
	"github.com/subspace/kbkit/wire"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/subspace/kbkit/internal/taskpool"
	"github.com/subspace/kbkit/server/dispatch"
	"github.com/subspace/kbkit/server/store"
)

// DefaultMaxBody is the default limit of a request body or WebSocket
// message.
const DefaultMaxBody = 256 << 10

// DefaultDBTimeout bounds the database work of one call (Options.DBTimeout).
const DefaultDBTimeout = 5 * time.Second

// RateLimit is a per-device token bucket: PerSecond calls refill it, up to
// Burst. Every procedure call takes one token (a batch of n calls takes
// n). PerSecond 0 turns the limit off.
type RateLimit struct {
	PerSecond float64
	Burst     int
}

// Options configure a Server. The zero value is usable.
type Options struct {
	// RateLimit is the per-device limit; the zero value is off.
	RateLimit RateLimit
	// MaxBody bounds a request body, a GET input and a WebSocket message in
	// bytes (default DefaultMaxBody).
	MaxBody int64
	// Logger receives structured logs (default slog.Default()).
	Logger *slog.Logger
	// Registry receives the metrics (default a new registry). If it is also
	// a prometheus.Gatherer (a *prometheus.Registry is), /metrics serves it;
	// otherwise /metrics serves prometheus.DefaultGatherer.
	Registry prometheus.Registerer
	// WriteTimeout bounds one WebSocket write (default 10s); a client that
	// does not read is disconnected.
	WriteTimeout time.Duration
	// AuthCacheTTL turns the token cache on (the default) or, negative,
	// off. While its LISTEN connection is in place the cache holds every
	// device, so a valid token costs no query; a revoked device leaves it
	// at once, a paired one joins it (tokens.go). The duration itself is
	// not used: the notifications keep the cache true.
	AuthCacheTTL time.Duration
	// DBTimeout bounds the database work of one call (default 5s;
	// negative: none). Past it the call is answered 503
	// SERVICE_UNAVAILABLE, retryable: a partition from Postgres (packets
	// dropped, a link too slow) is answered within it instead of hanging,
	// and a command whose COMMIT got no answer is retried with its id.
	DBTimeout time.Duration
	// Limits bound what one client can hold or cost (limits.go); the zero
	// value takes DefaultLimits.
	Limits Limits

	now        func() time.Time // for tests
	eventDelay time.Duration    // for tests: a slow WebSocket writer
}

// Server is kbkit's reference server: tRPC over HTTP and WebSocket on
// /trpc, Prometheus metrics on /metrics, a health check on /healthz. It
// is an http.Handler; the caller listens, and calls Shutdown before
// shutting its http.Server down.
type Server struct {
	// beforeCall, when set (by this package's tests), runs once a query or
	// mutation is admitted: the tests make it panic.
	beforeCall func(path string)

	st      *store.Store
	hub     *dispatch.Hub
	opts    Options
	log     *slog.Logger
	metrics *metrics
	limiter *limiter
	mux     *http.ServeMux
	auth    authCache

	baseCtx context.Context
	cancel  context.CancelFunc
	closing atomic.Bool

	mu    sync.Mutex
	conns map[*wsConn]struct{}
	wsWG  sync.WaitGroup

	inval *invalidator

	revoke revocations
	// listener is the LISTEN connection: the hub's, or the server's own
	// (started with its first handler) when there is no hub.
	listener    *pglisten.Listener
	ownListener bool
	listenOnce  sync.Once
	authGuard   *authGuard
	admission   *admission
	subsMu      sync.Mutex
	subsByDev   map[string]int // open subscriptions per device

	resubscribes atomic.Int64 // slow subscribers resubscribed (for tests)

	// tasks runs the sockets' workers and writers.
	tasks *taskpool.Pool
}

// New returns a Server on a store and a dispatch hub (the caller runs
// hub.Run). hub may be nil: subscriptions then fail with
// INTERNAL_SERVER_ERROR.
func New(st *store.Store, hub *dispatch.Hub, opts Options) *Server {
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 10 * time.Second
	}
	if opts.AuthCacheTTL == 0 {
		opts.AuthCacheTTL = 30 * time.Second
	}
	if opts.DBTimeout == 0 {
		opts.DBTimeout = DefaultDBTimeout
	}
	if opts.DBTimeout > 0 && st != nil {
		st.SetTxTimeout(opts.DBTimeout)
	}
	if opts.now == nil {
		opts.now = time.Now
	}
	opts.Limits = opts.Limits.withDefaults()
	var gatherer prometheus.Gatherer = prometheus.DefaultGatherer
	if opts.Registry == nil {
		reg := prometheus.NewRegistry()
		opts.Registry, gatherer = reg, reg
	} else if g, ok := opts.Registry.(prometheus.Gatherer); ok {
		gatherer = g
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		st: st, hub: hub, opts: opts, log: opts.Logger,
		limiter: newLimiter(opts.RateLimit, opts.now),
		baseCtx: ctx, cancel: cancel,
		conns:     map[*wsConn]struct{}{},
		authGuard: newAuthGuard(opts.Limits.AuthFailures, opts.now),
		admission: newAdmission(opts.Limits),
		subsByDev: map[string]int{},
		tasks:     taskpool.New(maxParked),
	}
	s.revoke.s = s
	s.metrics = newMetrics(opts.Registry, s)
	s.inval = newInvalidator(s)
	if hub != nil {
		s.listener = hub.Listener()
	} else if st != nil {
		s.listener = pglisten.New(func() *pgx.ConnConfig { return st.Pool().Config().ConnConfig.Copy() }, s.log)
		s.ownListener = true
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("/trpc", s.serveTRPC)
	s.mux.HandleFunc("/trpc/", s.serveTRPC)
	s.mux.Handle("/metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))
	s.mux.HandleFunc("/healthz", s.serveHealth)
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Shutdown drains the WebSocket side: it refuses new connections, sends
// {"id":null,"method":"reconnect"} on every open WebSocket, lets calls in
// progress finish, then closes the sockets (status 1001). Clients
// reconnect (to another instance) and resubscribe with their lastEventId.
// HTTP requests are drained by the caller's http.Server.Shutdown, which
// should be called after this. If ctx ends first, the remaining sockets
// are closed at once and ctx's error is returned.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closing.Store(true)
	s.mu.Lock()
	conns := make([]*wsConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	s.log.Info("server: shutting down", "websockets", len(conns))
	for _, c := range conns {
		go c.drain(ctx)
	}
	done := make(chan struct{})
	go func() { s.wsWG.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		s.mu.Lock()
		for c := range s.conns {
			_ = c.ws.CloseNow()
		}
		s.mu.Unlock()
	}
	s.cancel()
	s.tasks.Close()
	return err
}

// maxParked bounds the goroutines a Server keeps parked for its sockets'
// workers and writers (internal/taskpool): one each for a few dozen
// busy sockets at once; a burst past that starts goroutines of its own.
const maxParked = 64

func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if s.closing.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"status":"shutting down"}` + "\n"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.st.Pool().Ping(ctx); err != nil {
		s.log.Warn("healthz: database unavailable", "err", err)
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"status":"database unavailable"}` + "\n"))
		return
	}
	_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
}

// ---- authentication ----

// bearer extracts the token of an "Authorization: Bearer TOKEN" header.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", false
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

// ---- rate limiting ----

// limiter keeps one token bucket per device: Burst tokens, refilled at
// PerSecond.
type limiter struct {
	rate    float64
	burst   float64
	buckets *bucketMap
}

func newLimiter(rl RateLimit, now func() time.Time) *limiter {
	burst := max(float64(rl.Burst), 1)
	return &limiter{rate: rl.PerSecond, burst: burst, buckets: newBucketMap(burst, rl.PerSecond, time.Second, now)}
}

// size is the bucket's size as kb.limits advertises it: 0 without a
// rate limit.
func (l *limiter) size() int {
	if l.rate <= 0 {
		return 0
	}
	return int(l.burst)
}

// allow takes one token of the device's bucket, or answers
// TOO_MANY_REQUESTS with the time until the next token.
func (l *limiter) allow(device string) *callError {
	if l.rate <= 0 {
		return nil
	}
	ok, wait := l.buckets.take(device, true)
	if ok {
		return nil
	}
	return &callError{code: wire.CodeTooManyRequests, message: "rate limit exceeded for this device",
		retryable: true, retryAfter: wait}
}

// listen adds h for channels to the LISTEN connection.
func (s *Server) listen(h pglisten.Handler, channels ...string) {
	if s.listener == nil {
		return
	}
	s.listener.Handle(h, channels...)
	if s.ownListener {
		s.listenOnce.Do(func() { go func() { _ = s.listener.Run(s.baseCtx) }() })
	}
}
