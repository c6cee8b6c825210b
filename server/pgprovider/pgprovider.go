package pgprovider

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Kind names how a Server was obtained.
type Kind string

const (
	// KindDSN: an existing server given by a DSN (KBKIT_PG_DSN). Nothing is
	// started or stopped.
	KindDSN Kind = "dsn"
	// KindDocker: a container started with testcontainers-go.
	KindDocker Kind = "docker"
	// KindLocal: a throwaway cluster from this machine's initdb/postgres
	// binaries in a temporary directory.
	KindLocal Kind = "local"
)

// Environment variables read by OptionsFromEnv.
const (
	EnvKind           = "KBKIT_PG"              // dsn|docker|local: force one provider
	EnvDSN            = "KBKIT_PG_DSN"          // admin DSN of an existing server
	EnvImage          = "KBKIT_PG_IMAGE"        // docker image (default DefaultImage)
	EnvNetwork        = "KBKIT_DOCKER_NETWORK"  // "host": host-networking shape
	EnvBinInImage     = "KBKIT_PG_BIN_IN_IMAGE" // postgres bin dir inside the image (host-network shape)
	EnvBinDir         = "KBKIT_PG_BINDIR"       // local: only search these dirs (path list)
	EnvLocalUser      = "KBKIT_PG_USER"         // local, as root: user to run postgres as
	DefaultImage      = "postgres:16-alpine"
	DefaultBinInImage = "/usr/lib/postgresql/15/bin"
)

// readyTimeout bounds the wait for `SELECT 1` to succeed after a start.
const readyTimeout = 30 * time.Second

// dsnReadyTimeout bounds the wait for an existing server (dsn provider) to
// answer; a variable so tests can shorten it.
var dsnReadyTimeout = 10 * time.Second

// autoDockerBudget bounds starting a container during automatic selection
// (pull included) before local binaries are tried instead.
const autoDockerBudget = 2 * time.Minute

// dockerProbeTimeout bounds the "is a Docker engine there" check during
// automatic selection.
const dockerProbeTimeout = 3 * time.Second

// Options selects and configures a provider. The zero value auto-selects
// (see Start); OptionsFromEnv fills it from the environment.
type Options struct {
	// Kind forces a provider; empty selects automatically.
	Kind Kind
	// DSN of an existing server (Kind dsn). Should name an administrative
	// database (usually "postgres") of a role that may CREATE DATABASE.
	DSN string
	// Image is the docker image (default "postgres:16-alpine").
	Image string
	// HostNetwork runs the container with host networking and its own
	// command (for an image without an entrypoint, such as the one built by
	// scripts/pg-image.sh). Only meaningful where the Docker engine runs on
	// this machine.
	HostNetwork bool
	// BinInImage is the directory holding initdb and postgres inside the
	// image for the HostNetwork shape (default /usr/lib/postgresql/15/bin).
	BinInImage string
	// BinDirs, if non-empty, is the only place the local provider looks for
	// initdb/pg_ctl/postgres (PATH and /usr/lib/postgresql/*/bin are then not
	// searched).
	BinDirs []string
	// User is the unprivileged account the local provider runs initdb and
	// postgres as when this process is root (default "postgres", falling
	// back to "nobody"). Ignored when not root.
	User string
	// Fast turns fsync off (local and docker). Default: fsync and
	// synchronous_commit stay on, matching a stock pgbench setup, so
	// benchmarks are comparable. ForTest sets Fast.
	Fast bool
	// Topology of the local provider: single (default), sync-standby or
	// async-standby (a primary and one streaming standby; see Failover).
	// A standby topology needs the local provider.
	Topology Topology
	// Logf, if set, receives progress messages.
	Logf func(format string, args ...any)
}

// OptionsFromEnv reads KBKIT_PG (dsn|docker|local), KBKIT_PG_DSN,
// KBKIT_PG_IMAGE (default postgres:16-alpine), KBKIT_DOCKER_NETWORK=host,
// KBKIT_PG_BIN_IN_IMAGE, KBKIT_PG_BINDIR, KBKIT_PG_USER and
// KBKIT_PG_TOPOLOGY. An invalid KBKIT_PG or KBKIT_PG_TOPOLOGY value is kept
// as is and rejected by Start.
func OptionsFromEnv() Options {
	o := Options{
		Kind:        Kind(strings.ToLower(strings.TrimSpace(os.Getenv(EnvKind)))),
		DSN:         strings.TrimSpace(os.Getenv(EnvDSN)),
		Image:       strings.TrimSpace(os.Getenv(EnvImage)),
		HostNetwork: strings.EqualFold(strings.TrimSpace(os.Getenv(EnvNetwork)), "host"),
		BinInImage:  strings.TrimSpace(os.Getenv(EnvBinInImage)),
		User:        strings.TrimSpace(os.Getenv(EnvLocalUser)),
		Topology:    Topology(strings.ToLower(strings.TrimSpace(os.Getenv(EnvTopology)))),
	}
	if v := os.Getenv(EnvBinDir); strings.TrimSpace(v) != "" {
		for _, d := range filepath.SplitList(v) {
			if d = strings.TrimSpace(d); d != "" {
				o.BinDirs = append(o.BinDirs, d)
			}
		}
	}
	return o.withDefaults()
}

func (o Options) withDefaults() Options {
	if o.Image == "" {
		o.Image = DefaultImage
	}
	if o.BinInImage == "" {
		o.BinInImage = DefaultBinInImage
	}
	return o
}

func (o Options) logf(format string, args ...any) {
	if o.Logf != nil {
		o.Logf("pgprovider: "+format, args...)
	}
}

// backend is one running (or borrowed) server.
type backend interface {
	dsn() string
	stop(ctx context.Context) error
	restart(ctx context.Context) error
}

// Server is a PostgreSQL server obtained by Start. Its methods are safe for
// concurrent use.
type Server struct {
	kind Kind

	mu      sync.Mutex
	b       backend
	stopped bool
}

// Start obtains a PostgreSQL server.
//
// With opts.Kind set, exactly that provider is used. With it empty the
// order is: opts.DSN set -> dsn; else a Docker engine answers within a few
// seconds -> docker (if the container is not up within 2 minutes, pull
// included, local is tried next);
// else local binaries -> local. If nothing works the error lists each path
// tried, why it failed and how to fix it.
//
// The returned server has answered `SELECT 1`.
func Start(ctx context.Context, opts Options) (*Server, error) {
	opts = opts.withDefaults()
	var (
		b   backend
		err error
	)
	kind := opts.Kind
	topo, err := ParseTopology(string(opts.Topology))
	if err != nil {
		return nil, err
	}
	opts.Topology = topo
	if topo.HasStandby() {
		if kind != "" && kind != KindLocal {
			return nil, fmt.Errorf("pgprovider: topology %s needs the local provider (%s=%s)", topo, EnvKind, kind)
		}
		b, err = startReplicaSet(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("pgprovider: %s: %w\n%s", topo, err, fixLocal)
		}
		opts.logf("using local provider (%s): %s", topo, redactDSN(b.dsn()))
		return &Server{kind: KindLocal, b: b}, nil
	}
	switch kind {
	case KindDSN:
		b, err = startDSN(ctx, opts)
	case KindDocker:
		b, err = startDocker(ctx, opts)
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, fixDocker)
		}
	case KindLocal:
		b, err = startLocal(ctx, opts)
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, fixLocal)
		}
	case "":
		kind, b, err = autoStart(ctx, opts)
	default:
		return nil, fmt.Errorf("pgprovider: unknown provider kind %q (%s must be dsn, docker or local)", opts.Kind, EnvKind)
	}
	if err != nil {
		return nil, err
	}
	opts.logf("using %s provider: %s", kind, redactDSN(b.dsn()))
	return &Server{kind: kind, b: b}, nil
}

const (
	fixDSN    = "point KBKIT_PG_DSN at an existing server: KBKIT_PG_DSN=postgres://postgres:secret@127.0.0.1:5432/postgres?sslmode=disable (the role needs CREATEDB)"
	fixDocker = "start a Docker engine reachable by testcontainers-go (DOCKER_HOST or /var/run/docker.sock); without registry access also set TESTCONTAINERS_RYUK_DISABLED=true and use a local image (KBKIT_PG_IMAGE, see scripts/pg-image.sh)"
	fixLocal  = "install the PostgreSQL server binaries: apt-get install -y postgresql (or point KBKIT_PG_BINDIR at a directory holding initdb, pg_ctl and postgres)"
)

// dockerProbe reports whether a Docker engine answers. A variable so tests
// can stub the decision.
var dockerProbe = probeDocker

func autoStart(ctx context.Context, opts Options) (Kind, backend, error) {
	if opts.DSN != "" {
		b, err := startDSN(ctx, opts)
		if err != nil {
			return "", nil, fmt.Errorf("%w (selected because %s is set)", err, EnvDSN)
		}
		return KindDSN, b, nil
	}
	tried := []string{"dsn: " + EnvDSN + " is not set"}

	if err := dockerProbe(ctx, dockerProbeTimeout); err != nil {
		tried = append(tried, fmt.Sprintf("docker: no Docker engine answered (health probe, %s timeout): %v", dockerProbeTimeout, err))
	} else {
		// testcontainers retries failing image pulls for up to 15 minutes;
		// during automatic selection give up earlier and fall back.
		dctx, cancel := context.WithTimeout(ctx, autoDockerBudget)
		b, err := startDocker(dctx, opts)
		cancel()
		if err == nil {
			return KindDocker, b, nil
		}
		opts.logf("docker engine answered but starting %s failed, trying local binaries: %v", opts.Image, err)
		tried = append(tried, fmt.Sprintf("docker: engine answered but the container failed: %v", err))
	}
	if ctx.Err() != nil {
		return "", nil, noServerError(tried, ctx.Err())
	}

	b, err := startLocal(ctx, opts)
	if err == nil {
		return KindLocal, b, nil
	}
	tried = append(tried, "local: "+err.Error())
	return "", nil, noServerError(tried, nil)
}

func noServerError(tried []string, cause error) error {
	var sb strings.Builder
	sb.WriteString("pgprovider: no PostgreSQL server available")
	if cause != nil {
		fmt.Fprintf(&sb, " (%v)", cause)
	}
	sb.WriteString("; tried, in order:\n")
	for i, t := range tried {
		fmt.Fprintf(&sb, "  %d. %s\n", i+1, indentRest(t, "     "))
	}
	sb.WriteString("fix one of:\n")
	sb.WriteString("  - " + fixDSN + "\n")
	sb.WriteString("  - " + fixDocker + "\n")
	sb.WriteString("  - " + fixLocal)
	return errors.New(sb.String())
}

func indentRest(s, indent string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+indent)
}

// Kind reports which provider the server came from.
func (s *Server) Kind() Kind { return s.kind }

// DSN is the admin DSN (database "postgres"; for the dsn provider, the DSN
// as given).
func (s *Server) DSN() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.dsn()
}

// Stop stops and removes a cluster or container this package started
// (including its data). For the dsn provider it does nothing. Calling Stop
// again is a no-op.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	s.stopped = true
	return s.b.stop(ctx)
}

// Restart stops the server and starts it again on the same data directory
// and port, so DSNs handed out earlier stay valid. Data committed before
// the restart is kept. The dsn provider returns an error (unsupported).
func (s *Server) Restart(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return errors.New("pgprovider: Restart after Stop")
	}
	return s.b.restart(ctx)
}

// NewDatabase creates a fresh database (a unique name when name is "") and
// returns its DSN and a function that drops it (terminating remaining
// connections; safe to call more than once).
func (s *Server) NewDatabase(ctx context.Context, name string) (dsn string, drop func(context.Context) error, err error) {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return "", nil, errors.New("pgprovider: NewDatabase after Stop")
	}
	admin := s.b.dsn()
	s.mu.Unlock()

	if name == "" {
		name = uniqueName("kbkit")
	}
	if len(name) > 63 {
		return "", nil, fmt.Errorf("pgprovider: database name %q longer than 63 bytes", name)
	}
	dsn, err = dsnWithDatabase(admin, name)
	if err != nil {
		return "", nil, err
	}
	ident := pgx.Identifier{name}.Sanitize()
	if err := adminExec(ctx, admin, "CREATE DATABASE "+ident); err != nil {
		return "", nil, fmt.Errorf("pgprovider: create database %s: %w", ident, err)
	}
	drop = func(ctx context.Context) error {
		s.mu.Lock()
		admin := s.b.dsn()
		s.mu.Unlock()
		if err := adminExec(ctx, admin, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("pgprovider: drop database %s: %w", ident, err)
		}
		return nil
	}
	return dsn, drop, nil
}

func adminExec(ctx context.Context, dsn, sql string) error {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return err
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}

// uniqueName returns prefix_<time>_<random>, a valid unquoted identifier.
func uniqueName(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s_%s_%s", prefix, time.Now().UTC().Format("150405"), hex.EncodeToString(b[:]))
}

// dsnWithDatabase replaces the database of a URL or keyword/value DSN.
func dsnWithDatabase(dsn, db string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("pgprovider: parse DSN: %w", err)
		}
		u.Path = "/" + db
		u.RawPath = ""
		return u.String(), nil
	}
	// keyword/value: a later dbname overrides an earlier one.
	esc := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(db)
	return strings.TrimSpace(dsn) + " dbname='" + esc + "'", nil
}

// redactDSN hides a password in a URL DSN for logging.
func redactDSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
			return u.String()
		}
	}
	return dsn
}

// waitReady polls until `SELECT 1` succeeds on dsn, the timeout passes,
// ctx ends, or exited (if non-nil) is closed. describe, if non-nil, adds
// diagnostics (such as the tail of the server log) to an error.
func waitReady(ctx context.Context, dsn string, timeout time.Duration, exited <-chan struct{}, describe func() string) error {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("parse DSN: %w", err)
	}
	cfg.ConnectTimeout = 3 * time.Second
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	extra := func() string {
		if describe == nil {
			return ""
		}
		return describe()
	}
	var lastErr error
	for {
		lastErr = trySelect1(ctx, cfg)
		if lastErr == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("server process exited before accepting connections (last error: %v)%s", lastErr, extra())
		case <-ctx.Done():
			return fmt.Errorf("`SELECT 1` did not succeed within %s: %v%s", timeout, lastErr, extra())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func trySelect1(ctx context.Context, cfg *pgx.ConnConfig) error {
	conn, err := pgx.ConnectConfig(ctx, cfg.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		return err
	}
	if one != 1 {
		return fmt.Errorf("SELECT 1 returned %d", one)
	}
	return nil
}

// freePort returns a currently free TCP port on 127.0.0.1 (listen on :0,
// close). Another process may grab it before use; callers retry on bind
// failures where they can.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, err
	}
	return port, nil
}

// dsnBackend is an existing server.
type dsnBackend struct{ d string }

func startDSN(ctx context.Context, opts Options) (backend, error) {
	if opts.DSN == "" {
		return nil, fmt.Errorf("pgprovider: kind dsn but no DSN given (set %s)", EnvDSN)
	}
	if _, err := pgx.ParseConfig(opts.DSN); err != nil {
		return nil, fmt.Errorf("pgprovider: %s: invalid DSN: %w", EnvDSN, err)
	}
	if err := waitReady(ctx, opts.DSN, dsnReadyTimeout, nil, nil); err != nil {
		return nil, fmt.Errorf("pgprovider: dsn %s: %w", redactDSN(opts.DSN), err)
	}
	return dsnBackend{opts.DSN}, nil
}

func (d dsnBackend) dsn() string                { return d.d }
func (d dsnBackend) stop(context.Context) error { return nil }
func (d dsnBackend) restart(context.Context) error {
	return errors.New("pgprovider: Restart is unsupported for the dsn provider (the server is not ours to restart)")
}
