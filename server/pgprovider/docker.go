package pgprovider

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"
	"github.com/testcontainers/testcontainers-go/wait"
)

// probeDocker asks testcontainers-go's Docker provider whether an engine
// answers (docker info), bounded by timeout even if the client blocks.
func probeDocker(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ch := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				ch <- fmt.Errorf("docker provider panicked: %v", r)
			}
		}()
		p, err := testcontainers.NewDockerProvider(testcontainers.WithLogger(tclog.NewNoopLogger()))
		if err != nil {
			ch <- err
			return
		}
		ch <- p.Health(ctx) // Health closes the provider
	}()
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return fmt.Errorf("no answer: %w", ctx.Err())
	}
}

// dockerShape names the two ways a container is run.
type dockerShape string

const (
	// shapeMapped: an official postgres image (it has an entrypoint), via
	// testcontainers-go's postgres module, port 5432 published.
	shapeMapped dockerShape = "mapped"
	// shapeHostNet: host networking and our own command (initdb + postgres
	// as user postgres), for an image without an entrypoint.
	shapeHostNet dockerShape = "host-network"
)

func shapeFor(opts Options) dockerShape {
	if opts.HostNetwork {
		return shapeHostNet
	}
	return shapeMapped
}

// serverSettings are the -c settings shared by all providers.
func serverSettings(fast bool) []string {
	fsync := "on"
	if fast {
		fsync = "off"
	}
	return []string{
		"-c", "fsync=" + fsync,
		"-c", "synchronous_commit=on",
		"-c", "max_connections=200",
	}
}

type dockerServer struct {
	opts  Options
	shape dockerShape
	ctr   testcontainers.Container
	pgCtr *tcpostgres.PostgresContainer // shapeMapped only
	d     string
}

type logfLogger func(string, ...any)

func (f logfLogger) Printf(format string, v ...any) { f(format, v...) }

func (o Options) tcLogger() tclog.Logger {
	if o.Logf == nil {
		return tclog.NewNoopLogger()
	}
	return logfLogger(o.Logf)
}

func startDocker(ctx context.Context, opts Options) (backend, error) {
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("pick a free port: %w", err)
	}
	s := &dockerServer{opts: opts, shape: shapeFor(opts)}
	switch s.shape {
	case shapeHostNet:
		err = s.runHostNet(ctx, port)
	default:
		err = s.runMapped(ctx, port)
	}
	if err != nil {
		if s.ctr != nil {
			_ = s.ctr.Terminate(context.WithoutCancel(ctx))
		}
		return nil, fmt.Errorf("docker (%s, image %s): %w", s.shape, opts.Image, err)
	}
	if err := waitReady(ctx, s.d, readyTimeout, nil, s.logTail(ctx)); err != nil {
		_ = s.ctr.Terminate(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("docker (%s, image %s): %w", s.shape, opts.Image, err)
	}
	opts.logf("docker %s container %s, image %s", s.shape, s.ctr.GetContainerID(), opts.Image)
	return s, nil
}

// mappedCustomizers are the testcontainers options for shapeMapped. The
// host port is pinned (chosen free by us) so Restart keeps the DSN valid;
// Docker would otherwise pick a new ephemeral port on every start.
func mappedCustomizers(opts Options, hostPort int) []testcontainers.ContainerCustomizer {
	cmd := append([]string{"postgres"}, serverSettings(opts.Fast)...)
	return []testcontainers.ContainerCustomizer{
		testcontainers.WithLogger(opts.tcLogger()),
		tcpostgres.WithDatabase("postgres"),
		tcpostgres.WithUsername("postgres"),
		tcpostgres.WithPassword("postgres"),
		testcontainers.WithCmd(cmd...),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.PortBindings = network.PortMap{
				network.MustParsePort("5432/tcp"): {{HostPort: strconv.Itoa(hostPort)}},
			}
		}),
		tcpostgres.BasicWaitStrategies(),
	}
}

func (s *dockerServer) runMapped(ctx context.Context, hostPort int) error {
	ctr, err := tcpostgres.Run(ctx, s.opts.Image, mappedCustomizers(s.opts, hostPort)...)
	if ctr != nil {
		s.ctr, s.pgCtr = ctr, ctr
	}
	if err != nil {
		return err
	}
	return s.refreshDSN(ctx)
}

func (s *dockerServer) refreshDSN(ctx context.Context) error {
	if s.pgCtr == nil {
		return nil
	}
	d, err := s.pgCtr.ConnectionString(ctx, "sslmode=disable")
	if err != nil {
		return fmt.Errorf("connection string: %w", err)
	}
	s.d = d
	return nil
}

// Paths inside the container for shapeHostNet. /tmp is the container's own
// (host networking shares the network only), so nothing clashes with the
// host; the data survives `docker stop`/`start` (Restart).
const (
	hostNetDataDir = "/tmp/kbkit-pg/data"
	hostNetSockDir = "/tmp"
)

var safePath = regexp.MustCompile(`^/[A-Za-z0-9_./+-]*$`)

// hostNetOuterScript becomes root-to-postgres: it runs the inner script ($1)
// as user postgres with whichever of setpriv, runuser or su the image has
// (setpriv needs no PAM, so scripts/pg-image.sh ships it), or directly when
// the container does not run as root.
const hostNetOuterScript = `uid=0
while read -r k v _; do [ "$k" = "Uid:" ] && uid=$v; done </proc/self/status
if [ "$uid" != 0 ]; then exec /bin/sh -c "$1"; fi
if command -v setpriv >/dev/null 2>&1; then exec setpriv --reuid=postgres --regid=postgres --init-groups /bin/sh -c "$1"; fi
if command -v runuser >/dev/null 2>&1; then exec runuser -u postgres -- /bin/sh -c "$1"; fi
if command -v su >/dev/null 2>&1; then exec su postgres -s /bin/sh -c "$1"; fi
echo "kbkit-pg: running as root but the image has none of setpriv, runuser, su" >&2
exit 1
`

// hostNetScripts returns the outer script and the inner one (run as
// postgres): initdb unless the data dir is initialised (Restart reuses it),
// then exec postgres on 127.0.0.1:port.
func hostNetScripts(binDir, dataDir, sockDir string, port int, fast bool) (outer, inner string, err error) {
	for _, p := range []string{binDir, dataDir, sockDir} {
		if !safePath.MatchString(p) {
			return "", "", fmt.Errorf("unsupported path %q (absolute, [A-Za-z0-9_./+-] only)", p)
		}
	}
	args := []string{
		binDir + "/postgres", "-D", dataDir,
		"-p", strconv.Itoa(port), "-k", sockDir,
		"-c", "listen_addresses=127.0.0.1",
	}
	args = append(args, serverSettings(fast)...)
	inner = fmt.Sprintf(`set -e
if [ ! -s %[2]s/PG_VERSION ]; then
	%[1]s/initdb -D %[2]s -A trust -U postgres --no-sync -E UTF8 --locale=C
fi
exec %[3]s
`, binDir, dataDir, strings.Join(args, " "))
	return hostNetOuterScript, inner, nil
}

// hostNetCustomizers are the testcontainers options for shapeHostNet.
func hostNetCustomizers(opts Options, port int) ([]testcontainers.ContainerCustomizer, error) {
	outer, inner, err := hostNetScripts(opts.BinInImage, hostNetDataDir, hostNetSockDir, port, opts.Fast)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvBinInImage, err)
	}
	return []testcontainers.ContainerCustomizer{
		testcontainers.WithLogger(opts.tcLogger()),
		testcontainers.WithEntrypoint("/bin/sh", "-c", outer, "kbkit-pg", inner),
		testcontainers.WithCmd(),
		testcontainers.WithEnv(map[string]string{"LC_ALL": "C", "LANG": "C"}),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.NetworkMode = "host"
		}),
		testcontainers.WithConfigModifier(func(c *container.Config) {
			c.StopSignal = "SIGINT" // postgres fast shutdown
		}),
		testcontainers.WithWaitStrategy(
			wait.ForLog("database system is ready to accept connections").WithStartupTimeout(2 * time.Minute),
		),
	}, nil
}

// hostNetProviderOptions make testcontainers-go treat Docker's "host"
// network as its default one. Otherwise, on an engine without the "bridge"
// network (dockerd --bridge=none), it creates a bridge network
// "reaper_default" on a private range and attaches the container to it as
// well, which fails next to host networking and is traffic on a private
// range we must never create.
func hostNetProviderOptions(opts Options) []testcontainers.DockerProviderOption {
	return []testcontainers.DockerProviderOption{
		testcontainers.WithLogger(opts.tcLogger()),
		testcontainers.WithDefaultBridgeNetwork("host"),
		testcontainers.DefaultNetwork("host"),
	}
}

func (s *dockerServer) runHostNet(ctx context.Context, port int) error {
	cust, err := hostNetCustomizers(s.opts, port)
	if err != nil {
		return err
	}
	// As testcontainers.Run, but with our provider options.
	req := testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{Image: s.opts.Image},
		Started:          true,
	}
	for _, c := range cust {
		if err := c.Customize(&req); err != nil {
			return fmt.Errorf("customize: %w", err)
		}
	}
	p, err := testcontainers.NewDockerProvider(hostNetProviderOptions(s.opts)...)
	if err != nil {
		return fmt.Errorf("docker provider: %w", err)
	}
	defer p.Close()
	ctr, err := p.CreateContainer(ctx, req.ContainerRequest)
	if ctr != nil {
		s.ctr = ctr
	}
	if err != nil {
		return fmt.Errorf("create container: %w", err)
	}
	if err := ctr.Start(ctx); err != nil {
		return fmt.Errorf("start container: %w", err)
	}
	s.d = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	return nil
}

// logTail returns a describe func for waitReady with the container's log.
func (s *dockerServer) logTail(ctx context.Context) func() string {
	return func() string {
		rc, err := s.ctr.Logs(context.WithoutCancel(ctx))
		if err != nil {
			return "\n(no container log: " + err.Error() + ")"
		}
		defer rc.Close()
		var b strings.Builder
		buf := make([]byte, 32<<10)
		for {
			n, err := rc.Read(buf)
			b.Write(buf[:n])
			if err != nil || b.Len() > 1<<20 {
				break
			}
		}
		return "\ncontainer log tail:\n" + tail([]byte(b.String()), 3000)
	}
}

func (s *dockerServer) dsn() string { return s.d }

func (s *dockerServer) stop(ctx context.Context) error {
	if err := s.ctr.Terminate(ctx); err != nil {
		return fmt.Errorf("pgprovider: terminate container: %w", err)
	}
	return nil
}

func (s *dockerServer) restart(ctx context.Context) error {
	timeout := 30 * time.Second
	if err := s.ctr.Stop(ctx, &timeout); err != nil {
		return fmt.Errorf("pgprovider: stop container: %w", err)
	}
	if err := s.ctr.Start(ctx); err != nil {
		return fmt.Errorf("pgprovider: start container: %w", err)
	}
	if err := s.refreshDSN(ctx); err != nil {
		return err
	}
	return waitReady(ctx, s.d, readyTimeout, nil, s.logTail(ctx))
}
