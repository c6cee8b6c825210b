package target

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/subspace/kbkit/server"
	serverinstance "github.com/subspace/kbkit/server/instance"
	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/server/store"
)

// EmbeddedOptions configure an in-process reference server.
type EmbeddedOptions struct {
	// Instances is the number of server instances sharing the database
	// (default 2); windows are spread over them.
	Instances int
	// Postgres, when set, lets the simulator restart the database (a
	// fault); it must be the server the DSN points to.
	Postgres *pgprovider.Server
	// Logger receives the servers' logs (default: discarded).
	Logger *slog.Logger
	// Wrap, when set, wraps each instance's handler: the tests use it to
	// build deliberately broken servers.
	Wrap func(http.Handler) http.Handler
	// Limits are the instances' limits (server.Limits; zero: defaults).
	Limits server.Limits
	// RateLimit is the instances' per-device rate limit (zero: off).
	RateLimit server.RateLimit
	// WriteTimeout is the instances' WebSocket write timeout (zero: the
	// default).
	WriteTimeout time.Duration
	// DSNs, when set, gives instance i its own DSN (DSNs[i]): the same
	// database reached another way (through a fault layer of its own).
	DSNs []string
	// Fence makes each instance use only a primary with its synchronous
	// standby attached (store.OpenOptions.Fence).
	Fence bool
}

// Embedded is a Target running kbkit's reference server in process, on
// loopback ports.
type Embedded struct {
	dsn  string
	opts EmbeddedOptions
	mu   sync.Mutex
	inst []*instance
	// faultMu serialises restarts: seeds running in parallel may each
	// draw one, and an instance must not start while Postgres restarts.
	faultMu sync.Mutex
}

// instance is one server instance and the address it listens on (kept
// across a restart).
type instance struct {
	addr string
	*serverinstance.Instance
}

// NewEmbedded starts the instances on dsn (migrating it).
func NewEmbedded(ctx context.Context, dsn string, opts EmbeddedOptions) (*Embedded, error) {
	if opts.Instances <= 0 {
		opts.Instances = 2
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	e := &Embedded{dsn: dsn, opts: opts}
	for i := 0; i < opts.Instances; i++ {
		in, err := e.start(ctx, "127.0.0.1:0", i)
		if err != nil {
			e.Close()
			return nil, fmt.Errorf("%w: start instance %d: %v", ErrCannotRun, i, err)
		}
		e.inst = append(e.inst, in)
	}
	return e, nil
}

func (e *Embedded) start(ctx context.Context, addr string, i int) (*instance, error) {
	dsn := e.dsn
	if i < len(e.opts.DSNs) {
		dsn = e.opts.DSNs[i]
	}
	var ln net.Listener
	listen := func() (net.Listener, error) {
		var err error
		for attempt := 0; ; attempt++ {
			ln, err = net.Listen("tcp", addr)
			if err == nil || attempt > 50 {
				return ln, err
			}
			time.Sleep(50 * time.Millisecond) // the old listener's port is being released
		}
	}
	// The store first, then the port, as before a restart: a connection
	// is taken only when the instance can serve it.
	in, err := serverinstance.StartListening(ctx, serverinstance.Config{
		DSN:   dsn,
		Store: store.OpenOptions{Fence: e.opts.Fence},
		Server: server.Options{Logger: e.opts.Logger, Limits: e.opts.Limits, RateLimit: e.opts.RateLimit,
			WriteTimeout: e.opts.WriteTimeout},
		Wrap: e.opts.Wrap,
	}, listen)
	if err != nil {
		return nil, err
	}
	return &instance{addr: ln.Addr().String(), Instance: in}, nil
}

// Endpoints implements Target.
func (e *Embedded) Endpoints() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]string, len(e.inst))
	for i, in := range e.inst {
		out[i] = "http://" + in.addr
	}
	return out
}

// Devices pairs n devices in a fresh workspace.
func (e *Embedded) Devices(ctx context.Context, n int) ([]string, error) {
	ws := "sim-" + uuid.NewString()
	var out []string
	for i := 0; i < n; i++ {
		var d store.PairedDevice
		var err error
		for attempt := 0; attempt < 50; attempt++ {
			e.mu.Lock() // an instance being restarted has a closed store
			st := e.inst[0].Store
			d, err = st.PairDevice(ctx, ws)
			e.mu.Unlock()
			if err == nil || !store.IsRetryable(err) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: pair device: %v", ErrCannotRun, err)
		}
		out = append(out, d.Token)
	}
	return out, nil
}

// RestartInstance kills instance i (its sockets drop) and starts it again
// on the same address.
func (e *Embedded) RestartInstance(ctx context.Context, i int) error {
	e.faultMu.Lock()
	defer e.faultMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	old := e.inst[i]
	old.Kill() // its sockets drop
	// The database may be briefly unavailable: keep trying, as an
	// orchestrator restarting a crashed instance would.
	var err error
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		var in *instance
		if in, err = e.start(ctx, old.addr, i); err == nil {
			e.inst[i] = in
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return err
}

// GroupCommits sums the instances' group-commit counters (since their last
// start): how many transactions decided several commands of one page.
func (e *Embedded) GroupCommits() store.Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	var sum store.Stats
	for _, in := range e.inst {
		st := in.Store.Stats()
		sum.Batches += st.Batches
		sum.BatchedCommands += st.BatchedCommands
		sum.BatchFailures += st.BatchFailures
	}
	return sum
}

// CanRestartPostgres reports whether the target was given its Postgres.
func (e *Embedded) CanRestartPostgres() bool { return e.opts.Postgres != nil }

// RestartPostgres restarts the database, when the target was given one.
func (e *Embedded) RestartPostgres(ctx context.Context) error {
	if e.opts.Postgres == nil {
		return errors.New("target: no Postgres to restart")
	}
	e.faultMu.Lock()
	defer e.faultMu.Unlock()
	return e.opts.Postgres.Restart(ctx)
}

// Close stops every instance.
func (e *Embedded) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, in := range e.inst {
		in.Kill()
	}
	e.inst = nil
}

// CanFailover reports whether the target's Postgres has a standby.
func (e *Embedded) CanFailover() bool {
	return e.opts.Postgres != nil && e.opts.Postgres.Topology().HasStandby()
}

// Failover fails the target's Postgres over to its standby and reseeds a
// standby; the instances find the new primary through their multi-host DSN.
func (e *Embedded) Failover(ctx context.Context, stall time.Duration) error {
	if !e.CanFailover() {
		return errors.New("target: the target's Postgres has no standby (--topology sync-standby)")
	}
	e.faultMu.Lock()
	defer e.faultMu.Unlock()
	_, err := e.opts.Postgres.Failover(ctx, pgprovider.FailoverOptions{Stall: stall, Reseed: true})
	return err
}
