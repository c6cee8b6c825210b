package pgprovider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/subspace/kbkit/internal/procs"
)

// debianBinGlob is where Debian/Ubuntu install versioned server binaries.
var debianBinGlob = "/usr/lib/postgresql/*/bin"

// localBinaries are the programs a bin dir must hold.
var localBinaries = []string{"initdb", "pg_ctl", "postgres"}

// findLocalBinaries returns the first directory holding initdb, pg_ctl and
// postgres. With dirs non-empty only those are searched; otherwise the
// directory of initdb on PATH, then /usr/lib/postgresql/*/bin newest
// version first. The error says what was searched and why each failed.
func findLocalBinaries(dirs []string) (string, error) {
	var cands []string
	var notes []string
	if len(dirs) > 0 {
		cands = dirs
	} else {
		if p, err := exec.LookPath("initdb"); err == nil {
			// Prefer the real directory when PATH holds symlinks (e.g.
			// /usr/local/bin/initdb -> /usr/lib/postgresql/15/bin/initdb).
			if r, err := filepath.EvalSymlinks(p); err == nil {
				cands = append(cands, filepath.Dir(r))
			}
			cands = append(cands, filepath.Dir(p))
		} else {
			notes = append(notes, "initdb not on PATH ("+os.Getenv("PATH")+")")
		}
		if p, err := exec.LookPath("pg_ctl"); err == nil {
			cands = append(cands, filepath.Dir(p))
		}
		matches, _ := filepath.Glob(debianBinGlob)
		sortByVersionDesc(matches)
		if len(matches) == 0 {
			notes = append(notes, "no "+debianBinGlob)
		}
		cands = append(cands, matches...)
	}
	seen := map[string]bool{}
	for _, d := range cands {
		if seen[d] {
			continue
		}
		seen[d] = true
		var missing []string
		for _, b := range localBinaries {
			if !isExecutable(filepath.Join(d, b)) {
				missing = append(missing, b)
			}
		}
		if len(missing) == 0 {
			return d, nil
		}
		notes = append(notes, fmt.Sprintf("%s: missing %s", d, strings.Join(missing, ", ")))
	}
	where := "PATH and " + debianBinGlob
	if len(dirs) > 0 {
		where = strings.Join(dirs, string(os.PathListSeparator)) + " (Options.BinDirs / " + EnvBinDir + ")"
	}
	return "", fmt.Errorf("no PostgreSQL server binaries (initdb, pg_ctl, postgres) found in %s: %s", where, strings.Join(notes, "; "))
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// sortByVersionDesc orders /usr/lib/postgresql/<ver>/bin paths newest first
// (numeric: 16 > 15 > 9.6).
func sortByVersionDesc(paths []string) {
	ver := func(p string) []int {
		var out []int
		for _, f := range strings.Split(filepath.Base(filepath.Dir(p)), ".") {
			n, err := strconv.Atoi(f)
			if err != nil {
				n = -1
			}
			out = append(out, n)
		}
		return out
	}
	sort.SliceStable(paths, func(i, j int) bool {
		a, b := ver(paths[i]), ver(paths[j])
		for k := 0; k < len(a) && k < len(b); k++ {
			if a[k] != b[k] {
				return a[k] > b[k]
			}
		}
		return len(a) > len(b)
	})
}

// localCluster is a throwaway cluster in a temp dir.
type localCluster struct {
	opts   Options
	binDir string
	dir    string // temp root, removed by stop
	data   string
	sock   string
	log    string
	port   int
	cred   *credential // nil when not root
	env    []string

	// extra are further postgres arguments (replication settings of a
	// replica set's nodes).
	extra []string

	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for

	watchdog   *exec.Cmd
	watchdogIn io.WriteCloser
}

func startLocal(ctx context.Context, opts Options) (_ backend, err error) {
	binDir, err := findLocalBinaries(opts.BinDirs)
	if err != nil {
		return nil, err
	}
	c, err := newLocalNode(opts, binDir, "")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = c.stop(context.WithoutCancel(ctx))
		}
	}()
	if err := c.initdb(ctx); err != nil {
		return nil, err
	}
	if err := c.startOnPort(ctx, 0); err != nil {
		return nil, err
	}
	return c, nil
}

// newLocalNode makes the node's temp directory (owned by the unprivileged
// user when root) and starts its cleanup watchdog; the caller fills the
// data directory (initdb or pg_basebackup) and starts postgres. name tells
// the nodes of a replica set apart in temp dir names.
func newLocalNode(opts Options, binDir, name string) (_ *localCluster, err error) {
	c := &localCluster{opts: opts, binDir: binDir, env: childEnv()}
	uid, gid := os.Getuid(), os.Getgid()
	if os.Geteuid() == 0 {
		u, err := unprivilegedUser(opts.User)
		if err != nil {
			return nil, err
		}
		uid, gid = u.uid, u.gid
		c.cred = &credential{uid: uid, gid: gid}
		opts.logf("running as root: postgres will run as %s (uid %d)", u.name, uid)
	}
	base, err := tempBase(uid, gid)
	if err != nil {
		return nil, err
	}
	c.dir, err = os.MkdirTemp(base, "kbkit-pg-"+name)
	if err != nil {
		return nil, fmt.Errorf("create temp dir: %w", err)
	}
	defer func() {
		if err != nil {
			_ = c.stop(context.Background())
		}
	}()
	c.startWatchdog()
	c.data = filepath.Join(c.dir, "data")
	c.sock = filepath.Join(c.dir, "sock")
	c.log = filepath.Join(c.dir, "postgres.log")
	if err := os.Mkdir(c.sock, 0o700); err != nil {
		return nil, err
	}
	if c.cred != nil {
		for _, p := range []string{c.dir, c.sock} {
			if err := os.Chown(p, uid, gid); err != nil {
				return nil, fmt.Errorf("chown %s: %w", p, err)
			}
		}
	}
	return c, nil
}

// initdb makes a fresh cluster in the node's data directory.
func (c *localCluster) initdb(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, "initdb"),
		"-D", c.data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C")
	c.prepare(cmd)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb (%s) failed: %v\n%s", c.binDir, err, tail(out, 2000))
	}
	return nil
}

// startOnPort starts postgres on port, or (port 0) on a free port: one is
// free when picked but may be taken before postgres binds, so a few new
// ones are tried. A taken fixed port is an error.
func (c *localCluster) startOnPort(ctx context.Context, port int) (err error) {
	for attempt := 1; ; attempt++ {
		c.port = port
		if port == 0 {
			if c.port, err = freePort(); err != nil {
				return fmt.Errorf("pick a free port: %w", err)
			}
		}
		err = c.startPostgres(ctx)
		if err == nil {
			c.opts.logf("local cluster %s (binaries %s) on 127.0.0.1:%d", c.dir, c.binDir, c.port)
			return nil
		}
		if port != 0 || attempt >= 3 || !c.bindFailed() {
			return err
		}
		c.opts.logf("port %d was taken, retrying: %v", c.port, err)
	}
}

type unixUser struct {
	name     string
	uid, gid int
}

func unprivilegedUser(name string) (unixUser, error) {
	names := []string{"postgres", "nobody"}
	if name != "" {
		names = []string{name}
	}
	var errs []string
	for _, n := range names {
		u, err := user.Lookup(n)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		uid, err1 := strconv.Atoi(u.Uid)
		gid, err2 := strconv.Atoi(u.Gid)
		if err1 != nil || err2 != nil {
			errs = append(errs, "non-numeric uid/gid for "+n)
			continue
		}
		if uid == 0 {
			errs = append(errs, n+" is uid 0")
			continue
		}
		return unixUser{n, uid, gid}, nil
	}
	return unixUser{}, fmt.Errorf("running as root and no unprivileged user to run postgres as (%s); create one or set %s", strings.Join(errs, "; "), EnvLocalUser)
}

// tempBase returns os.TempDir() if uid/gid can traverse every ancestor of
// it, else /tmp. (As root with TMPDIR under /root, postgres could not reach
// its data directory.)
func tempBase(uid, gid int) (string, error) {
	for _, base := range []string{os.TempDir(), "/tmp"} {
		if canTraverse(base, uid, gid) {
			return base, nil
		}
	}
	return "", fmt.Errorf("neither %s nor /tmp is reachable by uid %d; set TMPDIR to a world-accessible directory", os.TempDir(), uid)
}

func canTraverse(dir string, uid, gid int) bool {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for {
		fi, err := os.Stat(dir)
		if err != nil || !fi.IsDir() {
			return false
		}
		owner, group, ok := fileOwner(fi)
		if !ok {
			return true
		}
		perm := fi.Mode().Perm()
		switch {
		case uid == 0:
		case owner == uid:
			if perm&0o100 == 0 {
				return false
			}
		case group == gid:
			if perm&0o010 == 0 {
				return false
			}
		default:
			if perm&0o001 == 0 {
				return false
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return true
		}
		dir = parent
	}
}

// childEnv is our environment without PG* variables (PGDATA, PGPORT, ...
// must not steer the child) and with the C locale.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PG") || strings.HasPrefix(kv, "LC_") || strings.HasPrefix(kv, "LANG=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C", "LANG=C")
}

func (c *localCluster) prepare(cmd *exec.Cmd) {
	cmd.Dir = c.dir
	cmd.Env = c.env
	ownGroup(cmd, c.cred)
}

func (c *localCluster) postgresArgs() []string {
	fsync := "on"
	if c.opts.Fast {
		fsync = "off"
	}
	return append([]string{
		"-D", c.data,
		"-p", strconv.Itoa(c.port),
		"-k", c.sock,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "fsync=" + fsync,
		"-c", "synchronous_commit=on",
		"-c", "max_connections=200",
	}, c.extra...)
}

func (c *localCluster) dsn() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// startPostgres runs the postmaster in its own process group, logging to
// c.log, and waits for `SELECT 1`. On failure the process is gone.
func (c *localCluster) startPostgres(ctx context.Context) error {
	logf, err := os.OpenFile(c.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "--- kbkit pgprovider: starting postgres on port %d at %s\n", c.port, time.Now().Format(time.RFC3339))
	cmd := exec.Command(filepath.Join(c.binDir, "postgres"), c.postgresArgs()...)
	c.prepare(cmd)
	cmd.Stdout, cmd.Stderr = logf, logf
	err = cmd.Start()
	_ = logf.Close() // the child has its own descriptor
	if err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	c.cmd, c.exited = cmd, exited
	if err := waitReady(ctx, c.dsn(), readyTimeout, exited, c.logTail); err != nil {
		_ = c.stopPostmaster(context.WithoutCancel(ctx))
		return fmt.Errorf("local postgres (%s, port %d): %w", c.dir, c.port, err)
	}
	return nil
}

func (c *localCluster) logTail() string {
	b, err := os.ReadFile(c.log)
	if err != nil {
		return "\n(no server log: " + err.Error() + ")"
	}
	return "\nserver log tail (" + c.log + "):\n" + tail(b, 3000)
}

func (c *localCluster) bindFailed() bool {
	b, _ := os.ReadFile(c.log)
	s := string(b)
	if i := strings.LastIndex(s, "--- kbkit pgprovider: starting"); i >= 0 {
		s = s[i:]
	}
	return strings.Contains(s, "could not bind") || strings.Contains(s, "could not create any TCP/IP sockets")
}

// stopPostmaster does a fast shutdown (SIGINT, as `pg_ctl stop -m fast`)
// and, if that takes longer than 30s or ctx ends, kills the process group.
func (c *localCluster) stopPostmaster(ctx context.Context) error {
	if c.cmd == nil {
		return nil
	}
	defer func() { c.cmd = nil }()
	select {
	case <-c.exited:
		return nil
	default:
	}
	interrupt(c.cmd.Process)
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case <-c.exited:
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	procs.KillTree(c.cmd.Process.Pid)
	<-c.exited
	return errors.New("postgres did not shut down in time; killed it and its backends")
}

func (c *localCluster) restart(ctx context.Context) error {
	if err := c.stopPostmaster(ctx); err != nil {
		c.opts.logf("restart: %v", err)
	}
	return c.startPostgres(ctx)
}

func (c *localCluster) stop(ctx context.Context) error {
	err := c.stopPostmaster(ctx)
	if c.dir != "" {
		if rerr := os.RemoveAll(c.dir); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	c.releaseWatchdog()
	return err
}

// watchdogScript runs as a separate process holding the read end of a pipe
// whose write end only we hold. A line on the pipe means "cleaned up
// already, exit". EOF means this process died without Stop (test binary
// exited, was killed, timed out): the watchdog then shuts the postmaster
// down (its pid is the first line of postmaster.pid, which also covers
// restarts) and removes the directory, so nothing is left behind.
const watchdogScript = `
dir=$1
if read -r _; then exit 0; fi
pidfile="$dir/data/postmaster.pid"
if [ -f "$pidfile" ]; then
	pid=$(head -n 1 "$pidfile")
	if [ -n "$pid" ] && kill -INT "$pid" 2>/dev/null; then
		i=0
		while kill -0 "$pid" 2>/dev/null && [ "$i" -lt 100 ]; do sleep 0.1; i=$((i+1)); done
		kill -QUIT "$pid" 2>/dev/null
		sleep 1
		kill -KILL "$pid" 2>/dev/null
	fi
fi
rm -rf "$dir"
`

func (c *localCluster) startWatchdog() {
	cmd := exec.Command("/bin/sh", "-c", watchdogScript, "kbkit-pg-watchdog", c.dir)
	// Own process group: a ^C to the test's group must not kill it before
	// it has cleaned up.
	ownGroup(cmd, nil)
	in, err := cmd.StdinPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		c.opts.logf("no cleanup watchdog (a crash may leave %s behind): %v", c.dir, err)
		return
	}
	c.watchdog, c.watchdogIn = cmd, in
}

func (c *localCluster) releaseWatchdog() {
	if c.watchdog == nil {
		return
	}
	_, _ = io.WriteString(c.watchdogIn, "done\n")
	_ = c.watchdogIn.Close()
	_ = c.watchdog.Wait()
	c.watchdog = nil
}

func tail(b []byte, n int) string {
	b = bytes.TrimRight(b, "\n")
	if len(b) > n {
		b = b[len(b)-n:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
		return "...\n" + string(b)
	}
	return string(b)
}
