package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/internal/gcfloor"
	"github.com/subspace/kbkit/server"
	"github.com/subspace/kbkit/server/instance"
	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/server/store"
)

// serveOptions are the flags of `kbkit serve`.
type serveOptions struct {
	addr      string
	dsn       string
	workspace string
	rate      float64
	burst     int
	maxBody   int64
	logLevel  string
	drain     time.Duration
	dbTimeout time.Duration
	limits    server.Limits
	// cpuProfile, when set, is where a CPU profile of the serving (from
	// the JSON line, or the last SIGUSR1, to the end of the shutdown) is
	// written.
	cpuProfile string
}

// serveInfo is the one JSON line `kbkit serve` prints on stdout.
type serveInfo struct {
	URL         string `json:"url"`
	Workspace   string `json:"workspace"` // the name; pair more devices of it with kbkit device pair --workspace
	WorkspaceID string `json:"workspace_id"`
	DeviceID    string `json:"device_id"`
	Token       string `json:"token"`
	DSN         string `json:"dsn"`
}

// NewServeCommand returns `kbkit serve`.
func NewServeCommand() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the reference server (tRPC over HTTP and WebSocket, spec/PROTOCOL.md)",
		Long: `Runs kbkit's reference server on --addr.

Without --dsn it starts a throwaway local PostgreSQL (see "kbkit pg up":
KBKIT_PG_DSN, else Docker, else the PostgreSQL binaries of this machine)
and creates a fresh database in it; everything is deleted on exit. With
--dsn it uses that database (migrating it if needed) and keeps it.

It then pairs a device of workspace --workspace and prints one JSON line on
stdout, so scripts can read it:

  {"url":"http://127.0.0.1:8080","workspace":"dev","workspace_id":"...","device_id":"...","token":"kbk_...","dsn":"postgres://..."}

Logs are JSON lines on stderr. SIGINT or SIGTERM shuts down gracefully:
WebSocket clients are told to reconnect, requests in flight finish. Started
by go run, it shuts down so too when the go command is gone (killing go
run does not pass the signal on). A port already taken: exit 2, pick
another with --addr.

Endpoints: /trpc (tRPC HTTP and WebSocket), /metrics (Prometheus), /healthz.

Memory: the Go heap may grow ` + strconv.Itoa(gcfloor.Default>>20) + ` MiB past the live heap before a collection
(or twice the live heap, whichever is more), so that under load the server
collects less often; GOGC or GOMEMLIMIT in the environment replace this.`,
		Example: `  kbkit serve
  kbkit serve --addr 127.0.0.1:0 > server.json & srv=$!
  until [ -s server.json ]; do sleep 1; done
  export KBKIT_URL=$(jq -r .url server.json) KBKIT_TOKEN=$(jq -r .token server.json)
  kbkit conformance protocol; kill $srv
  kbkit serve --dsn "$(cat pg.dsn)" --addr 127.0.0.1:8081 --rate-limit 50   # pg.dsn: kbkit pg up --print-dsn pg.dsn`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			ctx := c.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			return runServe(ctx, o, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", "127.0.0.1:8080", "listen on HOST:PORT (port 0 picks a free one; the JSON line has the real URL)")
	f.StringVar(&o.dsn, "dsn", "", "PostgreSQL DSN of the database to use (default: start a throwaway local PostgreSQL)")
	f.StringVar(&o.workspace, "workspace", "dev", "workspace of the device paired at start")
	f.Float64Var(&o.rate, "rate-limit", 0, "per-device limit in calls per second (0 = no limit)")
	f.IntVar(&o.burst, "rate-burst", 0, "per-device burst (default: twice the rate, at least 1)")
	f.Int64Var(&o.maxBody, "max-body", server.DefaultMaxBody, "largest request body or WebSocket message, in bytes")
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	f.DurationVar(&o.drain, "drain-timeout", 10*time.Second, "how long a graceful shutdown may take")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the serving (from the JSON line, or the last SIGUSR1, to the end of the shutdown) to this file")
	// Limits (spec/PROTOCOL.md section 8); a negative value turns one off.
	d := server.DefaultLimits
	f.DurationVar(&o.dbTimeout, "db-timeout", server.DefaultDBTimeout, "bound of one call's database work (then 503, retryable: a partition from Postgres answers within it)")
	f.DurationVar(&o.limits.BodyTimeout, "body-timeout", d.BodyTimeout, "longest wait for a request's headers and body (then 408 and the connection is closed)")
	f.DurationVar(&o.limits.IdleTimeout, "idle-timeout", d.IdleTimeout, "close a keep-alive HTTP connection idle this long")
	f.DurationVar(&o.limits.ParamsTimeout, "params-timeout", d.ParamsTimeout, "longest wait for a WebSocket's first (connectionParams) message (then close 1008)")
	f.IntVar(&o.limits.MaxConnections, "max-conns", d.MaxConnections, "most open TCP connections (past it: 503 and close)")
	f.IntVar(&o.limits.MaxSubscriptionsPerSocket, "max-subs-per-socket", d.MaxSubscriptionsPerSocket, "most open subscriptions on one WebSocket")
	f.IntVar(&o.limits.MaxSubscriptionsPerDevice, "max-subs-per-device", d.MaxSubscriptionsPerDevice, "most open subscriptions of one device on this instance")
	f.IntVar(&o.limits.MaxBatch, "max-batch", d.MaxBatch, "most calls in one HTTP batch or WebSocket message array")
	f.IntVar(&o.limits.AuthFailures, "auth-failures", d.AuthFailures, "unknown-token attempts per remote address per minute (then 429)")
	f.IntVar(&o.limits.MaxInflight, "max-inflight", d.MaxInflight, "admission control: calls run at once by this instance (-1 = no admission control)")
	f.IntVar(&o.limits.MaxQueue, "max-queue", d.MaxQueue, "admission control: calls waiting for a slot (past it: 503 with Retry-After)")
	f.DurationVar(&o.limits.QueueTimeout, "queue-timeout", d.QueueTimeout, "admission control: longest wait for a slot (then 503 with Retry-After; -1ns = no bound)")
	return cmd
}

func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})), nil
}

func runServe(ctx context.Context, o serveOptions, stdout, stderr io.Writer) (err error) {
	log, err := newLogger(stderr, o.logLevel)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if startedByGoRun() {
		// Killing `go run` leaves its child running: shut down when it
		// goes, as on SIGTERM.
		var stopWatch func()
		ctx, stopWatch = withParent(ctx, time.Second)
		defer stopWatch()
	}
	// Fewer collections under load (internal/gcfloor; GOGC or GOMEMLIMIT
	// in the environment turn it off).
	defer gcfloor.Start(gcfloor.Default)()

	// Bind first: a taken port fails in milliseconds, not after Postgres.
	ln, err := net.Listen("tcp", o.addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%w: another process (a kbkit serve still running?) holds %s; give another with --addr HOST:PORT (port 0 picks a free one)", err, o.addr)
	}
	if err != nil {
		return err
	}
	defer ln.Close()
	var prof *os.File
	if o.cpuProfile != "" {
		if prof, err = os.Create(o.cpuProfile); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer func() {
			if cerr := prof.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("--cpuprofile: %w", cerr)
			}
		}()
	}

	dsn := o.dsn
	if dsn == "" {
		var release func()
		if dsn, release, err = throwawayDatabase(ctx, log); err != nil {
			return err
		}
		defer release()
	}
	in, dev, err := startInstance(ctx, ln, dsn, o, log)
	if err != nil {
		return err
	}

	info := serveInfo{URL: "http://" + urlHost(ln.Addr()), Workspace: o.workspace, WorkspaceID: dev.WorkspaceID,
		DeviceID: dev.DeviceID, Token: dev.Token, DSN: dsn}
	if prof != nil {
		stopProfile, err := startCPUProfile(prof, log)
		if err != nil {
			in.Kill()
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer stopProfile()
	}
	line, _ := json.Marshal(info)
	if _, err := fmt.Fprintln(stdout, string(line)); err != nil {
		log.Warn("writing the JSON line to stdout", "err", err)
	}
	log.Info("serving", "url", info.URL, "workspace", o.workspace)

	select {
	case <-ctx.Done():
		if errors.Is(context.Cause(ctx), errParentGone) {
			log.Info("the parent process is gone, shutting down", "parent", "go run", "timeout", o.drain.String())
		} else {
			log.Info("signal received, shutting down", "timeout", o.drain.String())
		}
	case <-in.Done():
		in.Kill()
		return fmt.Errorf("serve: %w", in.Err())
	}
	sctx, cancel := context.WithTimeout(context.Background(), o.drain)
	defer cancel()
	in.Shutdown(sctx, log)
	log.Info("stopped")
	return nil
}

// throwawayDatabase starts a local PostgreSQL (server/pgprovider) and
// creates a fresh database in it; release stops the server and, on a
// borrowed one (KBKIT_PG_DSN), drops the database.
func throwawayDatabase(ctx context.Context, log *slog.Logger) (dsn string, release func(), err error) {
	log.Info("starting a local PostgreSQL (no --dsn)")
	popts := pgprovider.OptionsFromEnv()
	popts.Logf = func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) }
	pg, err := pgprovider.Start(ctx, popts)
	if err != nil {
		return "", nil, err
	}
	stopPg := func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := pg.Stop(sctx); err != nil {
			log.Error("stopping PostgreSQL", "err", err)
		}
	}
	dsn, drop, err := pg.NewDatabase(ctx, "")
	if err != nil {
		stopPg()
		return "", nil, err
	}
	return dsn, func() {
		if pg.Kind() == pgprovider.KindDSN { // a borrowed server: leave no database behind
			dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := drop(dctx); err != nil {
				log.Error("dropping the database", "err", err)
			}
		}
		stopPg()
	}, nil
}

// startInstance serves the reference server on ln (server/instance) and
// pairs the device of --workspace.
func startInstance(ctx context.Context, ln net.Listener, dsn string, o serveOptions, log *slog.Logger) (*instance.Instance, store.PairedDevice, error) {
	burst := o.burst
	if burst <= 0 {
		burst = max(1, int(2*o.rate))
	}
	// The Go runtime's and the process's own figures beside the server's
	// (goroutines, resident memory, open descriptors: kbkit pg soak reads
	// them).
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	octx, cancel := context.WithTimeout(ctx, time.Minute)
	in, err := instance.Start(octx, ln, instance.Config{
		DSN: dsn,
		Server: server.Options{
			Registry:  reg,
			RateLimit: server.RateLimit{PerSecond: o.rate, Burst: burst},
			MaxBody:   o.maxBody,
			Logger:    log,
			Limits:    o.limits,
			DBTimeout: o.dbTimeout,
		},
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	})
	cancel()
	if err != nil {
		return nil, store.PairedDevice{}, err
	}
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	dev, err := in.Store.PairDevice(pctx, o.workspace)
	cancel()
	if err != nil {
		in.Kill()
		return nil, store.PairedDevice{}, err
	}
	return in, dev, nil
}

// urlHost is the host:port to put in a URL for a listener: an unspecified
// address (0.0.0.0, ::) becomes loopback, which reaches it locally.
func urlHost(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	ip := tcp.IP
	if ip == nil || ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
	}
	host := ip.String()
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return fmt.Sprintf("%s:%d", host, tcp.Port)
}
