package main

import (
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/subspace/kbkit/internal/procs"
)

// harnessDir is a directory of this test's own for the Postgres clusters
// the commands start (TMPDIR), reachable by the unprivileged user
// postgres runs as under root. When the test ends, whatever still runs in
// it is killed (SIGCONT, SIGKILL) so that a failing test leaks nothing
// either.
func harnessDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "kbkit-leaks-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", dir)
	t.Cleanup(func() {
		left, _ := procs.Under(dir)
		for _, p := range left {
			_ = syscall.Kill(p.PID, syscall.SIGCONT)
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
		_ = os.RemoveAll(dir)
	})
	return dir
}

// noLeftovers fails the test for every process still running in dir, a
// stopped one (state T) above all.
func noLeftovers(t *testing.T, dir, after string) {
	t.Helper()
	left, err := procs.Under(dir)
	if err != nil {
		t.Skip(err)
	}
	// And every child of this process (kbkit serve of a soak runs with
	// this binary's working directory).
	all, _ := procs.All()
	mine := map[int]bool{}
	for _, pid := range procs.Descendants(os.Getpid()) {
		mine[pid] = true
	}
	for _, p := range all {
		if mine[p.PID] && p.State != "Z" {
			left = append(left, p)
		}
	}
	var lines []string
	for _, p := range left {
		lines = append(lines, p.String())
	}
	if len(lines) > 0 {
		t.Errorf("after %s, %d processes it started or stopped are left:\n%s", after, len(left), strings.Join(lines, "\n"))
	}
}

// TestFailoverLeavesNoProcess: kbkit pg failover-test (every topology
// and the split-brain scenario; the stall stops the primary's WAL sender
// with SIGSTOP), kbkit pg partition-test, kbkit pg soak (its server a
// process of its own) and the failover seeds of kbkit conformance run end
// every process they started or stopped.
func TestFailoverLeavesNoProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts Postgres clusters")
	}
	for _, topology := range []string{"sync-standby", "async-standby"} {
		t.Run("failover-test "+topology, func(t *testing.T) {
			dir := harnessDir(t)
			code, out, errs := kbkit(t, "", "pg", "failover-test", "--topology", topology, "--writers", "4", "--before", "1s", "--after", "1s")
			if code == exitErrored {
				t.Fatalf("exit %d\n%s\n%s", code, out, errs)
			}
			noLeftovers(t, dir, "kbkit pg failover-test --topology "+topology)
		})
	}
	t.Run("failover-test split-brain", func(t *testing.T) {
		dir := harnessDir(t)
		code, out, errs := kbkit(t, "", "pg", "failover-test", "--scenario", "split-brain", "--writers", "4", "--before", "1s", "--after", "2s")
		if code == exitErrored {
			t.Fatalf("exit %d\n%s\n%s", code, out, errs)
		}
		noLeftovers(t, dir, "kbkit pg failover-test --scenario split-brain (the old primary kept alive)")
	})
	t.Run("partition-test", func(t *testing.T) {
		dir := harnessDir(t)
		code, out, errs := kbkit(t, "", "pg", "partition-test", "--fault", "blackhole", "--hold", "1s", "--writers", "4", "--before", "1s", "--after", "1s")
		if code != exitOK {
			t.Fatalf("exit %d\n%s\n%s", code, out, errs)
		}
		noLeftovers(t, dir, "kbkit pg partition-test")
	})
	t.Run("soak", func(t *testing.T) {
		dir := harnessDir(t)
		// The server runs as this test binary's serve (TestMain).
		code, out, errs := kbkit(t, "", "pg", "soak", "--duration", "15s", "--gap", "4s", "--hold", "2s", "--writers", "3", "--sample", "1s")
		if code == exitErrored {
			t.Fatalf("exit %d\n%s\n%s", code, out, errs)
		}
		noLeftovers(t, dir, "kbkit pg soak")
	})
	t.Run("conformance run failover seeds", func(t *testing.T) {
		dir := harnessDir(t)
		code, out, errs := kbkit(t, "", "conformance", "run", "--seeds", "2", "--faults", "--topology", "sync-standby", "--steps", "60", "--out", t.TempDir())
		if code != exitOK {
			t.Fatalf("exit %d\n%s\n%s", code, out, errs)
		}
		noLeftovers(t, dir, "kbkit conformance run --faults --topology sync-standby")
	})
}
