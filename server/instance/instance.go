package instance

import (
	"context"
	"errors"
	"log"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/subspace/kbkit/server"
	"github.com/subspace/kbkit/server/dispatch"
	"github.com/subspace/kbkit/server/store"
)

// Config says how to build an instance.
type Config struct {
	// DSN is the database (migrated if needed).
	DSN string
	// Store are the store's options (store.OpenOptions: fencing).
	Store store.OpenOptions
	// Server are the server's options; Server.Logger is also the dispatch
	// hub's logger.
	Server server.Options
	// Wrap, when set, wraps the server's handler (tests build deliberately
	// broken servers with it).
	Wrap func(http.Handler) http.Handler
	// ErrorLog is the HTTP server's own error log (failed accepts, bad
	// handshakes); nil is the standard logger, as http.Server's.
	ErrorLog *log.Logger
}

// Instance is a running server instance. Its store, hub and HTTP server
// end with it (Shutdown or Kill).
type Instance struct {
	// Store is the instance's store (pairing devices, group-commit
	// counters); it is closed when the instance ends.
	Store  *store.Store
	Server *server.Server
	HTTP   *http.Server

	stopHub  context.CancelFunc
	hubDone  chan struct{}
	served   chan struct{}
	serveErr error
	endOnce  sync.Once
}

// Start opens the store on cfg.DSN (ctx bounds the opening only), starts
// its dispatch hub and serves the server on ln. On an error nothing is
// left running and ln is left to the caller.
func Start(ctx context.Context, ln net.Listener, cfg Config) (*Instance, error) {
	return StartListening(ctx, cfg, func() (net.Listener, error) { return ln, nil })
}

// StartListening is Start with the listener made by listen once the store
// is open: a restarted instance takes connections only when it can serve
// them, as a crashed server brought back by an orchestrator does. On an
// error nothing is left running.
func StartListening(ctx context.Context, cfg Config, listen func() (net.Listener, error)) (*Instance, error) {
	st, err := store.OpenWith(ctx, cfg.DSN, cfg.Store)
	if err != nil {
		return nil, err
	}
	ln, err := listen()
	if err != nil {
		st.Close()
		return nil, err
	}
	hub := dispatch.New(st, dispatch.Logger(cfg.Server.Logger))
	hubCtx, stopHub := context.WithCancel(context.Background())
	in := &Instance{Store: st, stopHub: stopHub, hubDone: make(chan struct{}), served: make(chan struct{})}
	go func() { defer close(in.hubDone); _ = hub.Run(hubCtx) }()
	in.Server = server.New(st, hub, cfg.Server)
	in.HTTP = in.Server.HTTPServer()
	if cfg.Wrap != nil {
		in.HTTP.Handler = cfg.Wrap(in.HTTP.Handler)
	}
	in.HTTP.ErrorLog = cfg.ErrorLog
	go func() {
		defer close(in.served)
		in.serveErr = in.HTTP.Serve(in.Server.Listener(ln))
	}()
	return in, nil
}

// Done is closed when the HTTP server stops serving: after Shutdown or
// Kill, or when its listener fails (Err says why).
func (in *Instance) Done() <-chan struct{} { return in.served }

// Err is why the HTTP server stopped serving, once Done is closed
// (http.ErrServerClosed after Shutdown or Kill).
func (in *Instance) Err() error {
	<-in.served
	return in.serveErr
}

// Shutdown stops the instance gracefully within ctx: WebSocket clients are
// told to reconnect (server.Server.Shutdown), HTTP requests in flight
// finish, then the hub stops and the store closes. What goes wrong is
// logged at warn level on logger (nil: nowhere).
func (in *Instance) Shutdown(ctx context.Context, logger *slog.Logger) {
	warn := func(msg string, err error) {
		if logger != nil {
			logger.Warn(msg, "err", err)
		}
	}
	if err := in.Server.Shutdown(ctx); err != nil {
		warn("closing WebSockets", err)
	}
	if err := in.HTTP.Shutdown(ctx); err != nil {
		warn("draining HTTP", err)
	}
	if err := in.Err(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		warn("serve", err)
	}
	in.end(true)
}

// Kill stops the instance as a crash would, to its clients: a short drain,
// then every socket is cut; the hub is told to stop (not awaited, as a
// crash would not) and the store closes.
func (in *Instance) Kill() {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_ = in.Server.Shutdown(ctx)
	_ = in.HTTP.Close()
	<-in.served
	in.end(false)
}

// end stops the hub (waiting for it when wait) and closes the store, once.
func (in *Instance) end(wait bool) {
	in.endOnce.Do(func() {
		in.stopHub()
		if wait {
			<-in.hubDone
		}
		in.Store.Close()
	})
}
