package pgprovider

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/testcontainers/testcontainers-go"
)

// No Docker engine runs where these tests were written: they check the
// decisions and the request we would send, and run the host-network
// container command against this machine's binaries.

func applyCustomizers(t *testing.T, cs []testcontainers.ContainerCustomizer) testcontainers.GenericContainerRequest {
	t.Helper()
	req := testcontainers.GenericContainerRequest{ContainerRequest: testcontainers.ContainerRequest{Image: "img"}}
	for _, c := range cs {
		if err := c.Customize(&req); err != nil {
			t.Fatal(err)
		}
	}
	return req
}

func TestDockerShapeDecision(t *testing.T) {
	if shapeFor(Options{}) != shapeMapped {
		t.Fatal("default shape")
	}
	if shapeFor(Options{HostNetwork: true}) != shapeHostNet {
		t.Fatal("host network shape")
	}
	t.Setenv(EnvNetwork, "host")
	if shapeFor(OptionsFromEnv()) != shapeHostNet {
		t.Fatal("env host network shape")
	}
}

func TestMappedRequest(t *testing.T) {
	for _, fast := range []bool{false, true} {
		req := applyCustomizers(t, mappedCustomizers(Options{Fast: fast}.withDefaults(), 45678))
		want := "postgres -c fsync=on -c synchronous_commit=on -c max_connections=200"
		if fast {
			want = strings.Replace(want, "fsync=on", "fsync=off", 1)
		}
		if got := strings.Join(req.Cmd, " "); got != want {
			t.Errorf("fast=%v cmd %q, want %q", fast, got, want)
		}
		if req.Env["POSTGRES_DB"] != "postgres" || req.Env["POSTGRES_USER"] != "postgres" || req.Env["POSTGRES_PASSWORD"] == "" {
			t.Errorf("env %v", req.Env)
		}
		if len(req.Entrypoint) != 0 {
			t.Errorf("mapped shape must keep the image entrypoint, got %v", req.Entrypoint)
		}
		hc := &container.HostConfig{}
		req.HostConfigModifier(hc)
		b := hc.PortBindings[network.MustParsePort("5432/tcp")]
		if len(b) != 1 || b[0].HostPort != "45678" {
			t.Errorf("port bindings %v", hc.PortBindings)
		}
		if req.WaitingFor == nil {
			t.Error("no wait strategy")
		}
	}
}

func TestHostNetRequest(t *testing.T) {
	cs, err := hostNetCustomizers(Options{HostNetwork: true, Image: "kbkit/postgres-local:15"}.withDefaults(), 45679)
	if err != nil {
		t.Fatal(err)
	}
	req := applyCustomizers(t, cs)
	if len(req.Entrypoint) != 5 || req.Entrypoint[0] != "/bin/sh" || req.Entrypoint[1] != "-c" {
		t.Fatalf("entrypoint %q", req.Entrypoint)
	}
	inner := req.Entrypoint[4]
	for _, want := range []string{
		"/usr/lib/postgresql/15/bin/initdb -D /tmp/kbkit-pg/data -A trust -U postgres --no-sync -E UTF8 --locale=C",
		"exec /usr/lib/postgresql/15/bin/postgres -D /tmp/kbkit-pg/data -p 45679 -k /tmp -c listen_addresses=127.0.0.1 -c fsync=on",
	} {
		if !strings.Contains(inner, want) {
			t.Errorf("inner script lacks %q:\n%s", want, inner)
		}
	}
	if len(req.Cmd) != 0 || len(req.ExposedPorts) != 0 {
		t.Errorf("cmd %v exposed %v", req.Cmd, req.ExposedPorts)
	}
	hc := &container.HostConfig{}
	req.HostConfigModifier(hc)
	if hc.NetworkMode != "host" {
		t.Errorf("network mode %q", hc.NetworkMode)
	}
	cfg := &container.Config{}
	req.ConfigModifier(cfg)
	if cfg.StopSignal != "SIGINT" {
		t.Errorf("stop signal %q", cfg.StopSignal)
	}

	t.Setenv(EnvBinInImage, "/opt/pg 16/bin")
	t.Setenv(EnvNetwork, "host")
	if _, err := hostNetCustomizers(OptionsFromEnv(), 1); err == nil || !strings.Contains(err.Error(), EnvBinInImage) {
		t.Fatalf("unsafe bin path accepted: %v", err)
	}
}

// TestHostNetScriptRunsLocally runs the exact container command (outer +
// inner script) on this machine with the local binaries, as the container
// would as root: it must drop to user postgres, initdb, serve on the port,
// and come back up on the same data dir (the Restart path).
func TestHostNetScriptRunsLocally(t *testing.T) {
	binDir, err := findLocalBinaries(nil)
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.MkdirTemp("", "kbkit-hostnet-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if os.Geteuid() == 0 {
		u, err := unprivilegedUser("postgres")
		if err != nil {
			t.Fatalf("needs the postgres user: %v", err)
		}
		if err := os.Chown(root, u.uid, u.gid); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(root, "data")
	for round := 1; round <= 2; round++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		outer, inner, err := hostNetScripts(binDir, data, root, port, true)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("/bin/sh", "-c", outer, "kbkit-pg", inner)
		cmd.Env = childEnv()
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		logPath := filepath.Join(t.TempDir(), "log")
		logf, _ := os.Create(logPath)
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		logf.Close()
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		dsn := "postgres://postgres@127.0.0.1:" + strconv.Itoa(port) + "/postgres?sslmode=disable"
		err = waitReady(context.Background(), dsn, readyTimeout, exited, func() string {
			b, _ := os.ReadFile(logPath)
			return "\n" + string(b)
		})
		if err == nil {
			conn := connect(t, dsn)
			var user string
			if qerr := conn.QueryRow(context.Background(), "SELECT (SELECT usename FROM pg_user WHERE usesysid = (SELECT datdba FROM pg_database WHERE datname='postgres'))").Scan(&user); qerr != nil {
				t.Error(qerr)
			}
			if round == 1 {
				mustExec(t, conn, "CREATE TABLE survives (i int)")
			} else if n := queryInt(t, conn, "SELECT count(*) FROM pg_tables WHERE tablename='survives'"); n != 1 {
				t.Error("data dir was not reused on the second start")
			}
			conn.Close(context.Background())
			if os.Geteuid() == 0 {
				st, _ := os.Stat(filepath.Join(data, "PG_VERSION"))
				if st == nil || st.Sys().(*syscall.Stat_t).Uid == 0 {
					t.Error("server ran as root")
				}
			}
		}
		// postgres is the group leader's exec'd image (setpriv/sh exec), so
		// SIGINT to the group leader is a fast shutdown.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}

func TestProbeDockerAnswersQuickly(t *testing.T) {
	start := time.Now()
	err := probeDocker(context.Background(), 3*time.Second)
	t.Logf("probeDocker: %v after %s", err, time.Since(start))
	// The probe's own bound is 3 s; past it by a minute, it hung.
	if time.Since(start) > 3*time.Second+time.Minute {
		t.Fatalf("probe took %s", time.Since(start))
	}
}
