package pgprovider

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) {
	if os.Getenv("PGPROVIDER_TEST_CRASH_CHILD") == "1" {
		crashChild()
		return
	}
	os.Exit(RunTests(m))
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctxT(t), dsn)
	if err != nil {
		t.Fatalf("connect %s: %v", dsn, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func mustExec(t *testing.T, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(ctxT(t), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func queryInt(t *testing.T, conn *pgx.Conn, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(ctxT(t), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func startLocalT(t *testing.T, fast bool) *Server {
	t.Helper()
	srv, err := Start(ctxT(t), Options{Kind: KindLocal, Fast: fast, Logf: t.Logf})
	if err != nil {
		t.Fatalf("Start local: %v", err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	return srv
}

func TestLocalLifecycle(t *testing.T) {
	ctx := ctxT(t)
	srv := startLocalT(t, false)
	if srv.Kind() != KindLocal {
		t.Fatalf("Kind = %q", srv.Kind())
	}
	lc := srv.b.(*localCluster)
	dir := lc.dir
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("temp dir %s: %v", dir, err)
	}
	if !strings.Contains(srv.DSN(), "/postgres?") {
		t.Fatalf("admin DSN %q does not name database postgres", srv.DSN())
	}
	admin := connect(t, srv.DSN())
	var fsync, syncCommit, maxConn string
	if err := admin.QueryRow(ctx, "SELECT current_setting('fsync'), current_setting('synchronous_commit'), current_setting('max_connections')").Scan(&fsync, &syncCommit, &maxConn); err != nil {
		t.Fatal(err)
	}
	if fsync != "on" || syncCommit != "on" || maxConn != "200" {
		t.Fatalf("settings fsync=%s synchronous_commit=%s max_connections=%s", fsync, syncCommit, maxConn)
	}
	if os.Geteuid() == 0 {
		st, err := os.Stat(lc.data)
		if err != nil {
			t.Fatal(err)
		}
		if st.Sys().(*syscall.Stat_t).Uid == 0 {
			t.Fatalf("data dir owned by root although we run as root")
		}
	}

	dsn1, drop1, err := srv.NewDatabase(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	dsn2, drop2, err := srv.NewDatabase(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if dsn1 == dsn2 {
		t.Fatalf("same DSN twice: %s", dsn1)
	}
	c1, c2 := connect(t, dsn1), connect(t, dsn2)
	var db1, db2 string
	_ = c1.QueryRow(ctx, "SELECT current_database()").Scan(&db1)
	_ = c2.QueryRow(ctx, "SELECT current_database()").Scan(&db2)
	if db1 == db2 || db1 == "" || db1 == "postgres" || db2 == "postgres" {
		t.Fatalf("databases %q and %q", db1, db2)
	}
	mustExec(t, c1, "CREATE TABLE kv (k int primary key, v text)")
	mustExec(t, c1, "INSERT INTO kv VALUES (1, 'one')")
	mustExec(t, c2, "CREATE TABLE kv (k int primary key, v text)")
	mustExec(t, c2, "INSERT INTO kv VALUES (1, 'a'), (2, 'b')")
	if n := queryInt(t, c1, "SELECT count(*) FROM kv"); n != 1 {
		t.Fatalf("db1 rows = %d, want 1 (databases not distinct?)", n)
	}

	// Named database.
	dsn3, drop3, err := srv.NewDatabase(ctx, "Named-DB")
	if err != nil {
		t.Fatal(err)
	}
	c3 := connect(t, dsn3)
	var db3 string
	_ = c3.QueryRow(ctx, "SELECT current_database()").Scan(&db3)
	if db3 != "Named-DB" {
		t.Fatalf("named database is %q", db3)
	}
	if err := drop3(ctx); err != nil { // c3 still connected: FORCE
		t.Fatal(err)
	}

	// Drop db1 while c1 is connected; it must be gone, db2 untouched.
	if err := drop1(ctx); err != nil {
		t.Fatal(err)
	}
	if err := drop1(ctx); err != nil {
		t.Fatalf("second drop: %v", err)
	}
	if n := queryInt(t, admin, "SELECT count(*) FROM pg_database WHERE datname = $1", db1); n != 0 {
		t.Fatalf("%s still exists after drop", db1)
	}
	if conn, err := pgx.Connect(ctx, dsn1); err == nil {
		conn.Close(ctx)
		t.Fatal("connected to a dropped database")
	}

	// Restart keeps committed data and the DSN.
	before := srv.DSN()
	oldPid := lc.cmd.Process.Pid
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if srv.DSN() != before {
		t.Fatalf("DSN changed across Restart: %s -> %s", before, srv.DSN())
	}
	if lc.cmd.Process.Pid == oldPid {
		t.Fatal("Restart did not start a new postmaster")
	}
	c2b := connect(t, dsn2)
	if n := queryInt(t, c2b, "SELECT count(*) FROM kv"); n != 2 {
		t.Fatalf("after Restart db2 has %d rows, want 2", n)
	}
	if err := drop2(ctx); err != nil {
		t.Fatal(err)
	}

	// Stop removes everything; the postmaster is gone; a second Stop is a no-op.
	pid := lc.cmd.Process.Pid
	if err := srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temp dir %s still there after Stop: %v", dir, err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("postmaster %d still alive after Stop", pid)
	}
	if err := srv.Stop(ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, _, err := srv.NewDatabase(ctx, ""); err == nil {
		t.Fatal("NewDatabase after Stop succeeded")
	}
	if err := srv.Restart(ctx); err == nil {
		t.Fatal("Restart after Stop succeeded")
	}
}

func TestFastLocalHasFsyncOff(t *testing.T) {
	srv := startLocalT(t, true)
	conn := connect(t, srv.DSN())
	var fsync string
	if err := conn.QueryRow(ctxT(t), "SHOW fsync").Scan(&fsync); err != nil {
		t.Fatal(err)
	}
	if fsync != "off" {
		t.Fatalf("fsync = %s with Fast", fsync)
	}
}

func TestDSNProvider(t *testing.T) {
	ctx := ctxT(t)
	local := startLocalT(t, true)
	// Kind empty with a DSN selects dsn without probing Docker.
	orig := dockerProbe
	dockerProbe = func(context.Context, time.Duration) error {
		t.Error("docker probed although a DSN was given")
		return errors.New("x")
	}
	defer func() { dockerProbe = orig }()

	srv, err := Start(ctx, Options{DSN: local.DSN()})
	if err != nil {
		t.Fatal(err)
	}
	if srv.Kind() != KindDSN || srv.DSN() != local.DSN() {
		t.Fatalf("kind %s dsn %s", srv.Kind(), srv.DSN())
	}
	dsn, drop, err := srv.NewDatabase(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	connect(t, dsn)
	if err := drop(ctx); err != nil {
		t.Fatal(err)
	}
	err = srv.Restart(ctx)
	if err == nil || !strings.Contains(err.Error(), "unsupported") {
		t.Fatalf("Restart on dsn: %v", err)
	}
	if err := srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	// The borrowed server is still up.
	connect(t, local.DSN())

	// A DSN that does not answer fails (no fallback) and says so.
	port, _ := freePort()
	bad := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=1", port)
	defer func(d time.Duration) { dsnReadyTimeout = d }(dsnReadyTimeout)
	dsnReadyTimeout = time.Second
	_, err = Start(ctx, Options{Kind: KindDSN, DSN: bad})
	if err == nil || !strings.Contains(err.Error(), strconv.Itoa(port)) {
		t.Fatalf("bad DSN: %v", err)
	}
	_, err = Start(ctx, Options{Kind: KindDSN})
	if err == nil || !strings.Contains(err.Error(), EnvDSN) {
		t.Fatalf("dsn without DSN: %v", err)
	}
}

func TestAutoSelectsLocalWithoutDocker(t *testing.T) {
	orig := dockerProbe
	dockerProbe = func(context.Context, time.Duration) error { return errors.New("stub: no engine") }
	defer func() { dockerProbe = orig }()
	srv, err := Start(ctxT(t), Options{Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(context.Background())
	if srv.Kind() != KindLocal {
		t.Fatalf("Kind = %s, want local", srv.Kind())
	}
}

func TestForcedLocalWithoutBinaries(t *testing.T) {
	empty := t.TempDir()
	_, err := Start(ctxT(t), Options{Kind: KindLocal, BinDirs: []string{empty}})
	if err == nil {
		t.Fatal("Start succeeded with an empty bin dir")
	}
	msg := err.Error()
	for _, want := range []string{empty, "initdb", "pg_ctl", "postgres", "apt-get install -y postgresql", EnvBinDir} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	t.Logf("error text:\n%s", msg)

	// Via the environment, too.
	t.Setenv(EnvKind, "local")
	t.Setenv(EnvBinDir, empty)
	_, err = Start(ctxT(t), OptionsFromEnv())
	if err == nil || !strings.Contains(err.Error(), empty) {
		t.Fatalf("env-forced local: %v", err)
	}
}

func TestNothingWorksListsEveryPath(t *testing.T) {
	orig := dockerProbe
	dockerProbe = func(context.Context, time.Duration) error {
		return errors.New("stub: Cannot connect to the Docker daemon")
	}
	defer func() { dockerProbe = orig }()
	empty := t.TempDir()
	_, err := Start(ctxT(t), Options{BinDirs: []string{empty}})
	if err == nil {
		t.Fatal("Start succeeded")
	}
	msg := err.Error()
	for _, want := range []string{
		"1. dsn: KBKIT_PG_DSN is not set",
		"2. docker:", "Cannot connect to the Docker daemon",
		"3. local:", empty,
		"KBKIT_PG_DSN=", "start a Docker engine", "TESTCONTAINERS_RYUK_DISABLED=true", "apt-get install -y postgresql",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	t.Logf("error text:\n%s", msg)
}

func TestUnknownKind(t *testing.T) {
	_, err := Start(context.Background(), Options{Kind: "podman"})
	if err == nil || !strings.Contains(err.Error(), "podman") {
		t.Fatalf("err = %v", err)
	}
}

func TestOptionsFromEnv(t *testing.T) {
	for _, k := range []string{EnvKind, EnvDSN, EnvImage, EnvNetwork, EnvBinInImage, EnvBinDir, EnvLocalUser} {
		t.Setenv(k, "")
	}
	o := OptionsFromEnv()
	if o.Kind != "" || o.DSN != "" || o.Image != "postgres:16-alpine" || o.HostNetwork || o.BinInImage != "/usr/lib/postgresql/15/bin" || o.BinDirs != nil || o.Fast {
		t.Fatalf("defaults: %+v", o)
	}
	t.Setenv(EnvKind, " Docker ")
	t.Setenv(EnvDSN, "postgres://u:p@h:5/postgres")
	t.Setenv(EnvImage, "kbkit/postgres-local:15")
	t.Setenv(EnvNetwork, "host")
	t.Setenv(EnvBinInImage, "/opt/pg/bin")
	t.Setenv(EnvBinDir, "/a/bin"+string(os.PathListSeparator)+"/b/bin")
	t.Setenv(EnvLocalUser, "pguser")
	o = OptionsFromEnv()
	if o.Kind != KindDocker || o.DSN != "postgres://u:p@h:5/postgres" || o.Image != "kbkit/postgres-local:15" ||
		!o.HostNetwork || o.BinInImage != "/opt/pg/bin" || strings.Join(o.BinDirs, ",") != "/a/bin,/b/bin" || o.User != "pguser" {
		t.Fatalf("parsed: %+v", o)
	}
	t.Setenv(EnvNetwork, "bridge")
	t.Setenv(EnvKind, "dsn")
	if o = OptionsFromEnv(); o.HostNetwork || o.Kind != KindDSN {
		t.Fatalf("bridge/dsn: %+v", o)
	}
	t.Setenv(EnvKind, "bogus")
	if _, err := Start(context.Background(), OptionsFromEnv()); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("bogus kind: %v", err)
	}
}

func TestDSNWithDatabase(t *testing.T) {
	got, err := dsnWithDatabase("postgres://u:p%40x@h:5432/postgres?sslmode=disable", "a b")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(got)
	if err != nil || cfg.Database != "a b" || cfg.Password != "p@x" || cfg.Port != 5432 {
		t.Fatalf("%s -> %+v %v", got, cfg, err)
	}
	got, _ = dsnWithDatabase("host=h port=5 user=u dbname=postgres", `it's`)
	cfg, err = pgx.ParseConfig(got)
	if err != nil || cfg.Database != "it's" || cfg.Host != "h" {
		t.Fatalf("%s -> %v", got, err)
	}
}

func TestSortByVersionDesc(t *testing.T) {
	p := []string{"/usr/lib/postgresql/9.6/bin", "/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/10/bin"}
	sortByVersionDesc(p)
	want := "/usr/lib/postgresql/16/bin /usr/lib/postgresql/15/bin /usr/lib/postgresql/10/bin /usr/lib/postgresql/9.6/bin"
	if strings.Join(p, " ") != want {
		t.Fatalf("got %v", p)
	}
}

func TestForTest(t *testing.T) {
	var dsns []string
	for i := range 2 {
		t.Run(fmt.Sprint("sub", i), func(t *testing.T) {
			dsn := ForTest(t)
			dsns = append(dsns, dsn)
			conn := connect(t, dsn)
			mustExec(t, conn, "CREATE TABLE x (i int)")
			var fsync string
			_ = conn.QueryRow(ctxT(t), "SHOW fsync").Scan(&fsync)
			if fsync != "off" {
				t.Errorf("ForTest server has fsync=%s, want off", fsync)
			}
		})
	}
	if len(dsns) != 2 || dsns[0] == dsns[1] {
		t.Fatalf("dsns %v", dsns)
	}
	// Both were dropped at their subtests' cleanup.
	admin := connect(t, shared.srv.DSN())
	for _, d := range dsns {
		cfg, _ := pgx.ParseConfig(d)
		if !strings.HasPrefix(cfg.Database, "t_testfortest_sub") {
			t.Errorf("database name %q", cfg.Database)
		}
		if n := queryInt(t, admin, "SELECT count(*) FROM pg_database WHERE datname=$1", cfg.Database); n != 0 {
			t.Errorf("%s not dropped", cfg.Database)
		}
	}
}

// crashChild starts a local cluster, reports its dir and port, and exits
// without Stop, as a crashed test binary would.
func crashChild() {
	srv, err := Start(context.Background(), Options{Kind: KindLocal, Fast: true})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	lc := srv.b.(*localCluster)
	fmt.Printf("CLUSTER %s %d\n", lc.dir, lc.port)
	os.Exit(3)
}

func TestNoOrphansWhenProcessDiesWithoutStop(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PGPROVIDER_TEST_CRASH_CHILD=1")
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var dir string
	var port int
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "CLUSTER %s %d", &dir, &port); err == nil {
			break
		}
	}
	if dir == "" || !strings.Contains(dir, "kbkit-pg-") {
		t.Fatalf("child output: %s", out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, statErr := os.Stat(dir)
		c, dialErr := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
		if dialErr == nil {
			c.Close()
		}
		if errors.Is(statErr, os.ErrNotExist) && dialErr != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("30s after the owner died: dir %s stat=%v, port %d dial=%v", dir, statErr, port, dialErr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestFindLocalBinaries(t *testing.T) {
	dir, err := findLocalBinaries(nil)
	if err != nil {
		t.Fatalf("this machine needs PostgreSQL server binaries for the tests: %v", err)
	}
	for _, b := range []string{"initdb", "pg_ctl", "postgres"} {
		if !isExecutable(filepath.Join(dir, b)) {
			t.Fatalf("%s lacks %s", dir, b)
		}
	}
	// A dir with only some binaries names what is missing.
	partial := t.TempDir()
	if err := os.WriteFile(filepath.Join(partial, "initdb"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = findLocalBinaries([]string{partial})
	if err == nil || !strings.Contains(err.Error(), "missing pg_ctl, postgres") {
		t.Fatalf("partial: %v", err)
	}
}
