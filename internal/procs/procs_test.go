package procs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A shell whose child runs in a session of its own and is stopped, as a
// postmaster's stalled WAL sender: KillTree ends both, and Under finds
// them by their working directory until then.
func TestKillTreeEndsAStoppedGrandchild(t *testing.T) {
	if _, err := All(); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	sh := exec.Command("/bin/sh", "-c", "setsid sleep 60 & echo $! > pid; wait")
	sh.Dir = dir
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = sh.Wait(); close(done) }()
	var kid int
	for deadline := time.Now().Add(time.Minute); kid == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(dir, "pid"))
		if len(b) > 1 {
			kid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
	}
	if kid == 0 {
		t.Fatal("no grandchild")
	}
	t.Cleanup(func() { _ = syscall.Kill(kid, syscall.SIGKILL) }) // whatever fails below
	_ = syscall.Kill(kid, syscall.SIGSTOP)
	left, err := Under(dir)
	if err != nil || len(left) < 2 {
		t.Fatalf("Under(%s): %v, %v; want the shell and its child", dir, left, err)
	}
	KillTree(sh.Process.Pid)
	<-done
	if !WaitGone([]int{kid}, 5*time.Second) {
		t.Fatalf("the stopped grandchild %d is still there", kid)
	}
	if left, _ := Under(dir); len(left) != 0 {
		t.Errorf("left: %v", left)
	}
	if u, err := UsageOf(os.Getpid()); err != nil || u.RSS <= 0 || u.FDs <= 0 {
		t.Errorf("UsageOf(self): %+v, %v", u, err)
	}
}

func TestParseStat(t *testing.T) {
	line := "4242 (post gres) (x)) S 17 4242 4242 0 -1 4194560 120 0 0 0 31 7 5 2 20 0 1 0 9000 1000 100\n"
	st, ok := parseStat(line)
	if !ok {
		t.Fatal("a well-formed line was refused")
	}
	if st.Comm != "post gres) (x)" || st.State != "S" || st.PPID != 17 || st.Ticks != 38 || st.ChildTicks != 7 {
		t.Fatalf("parsed %+v from %q", st, line)
	}
	for _, bad := range []string{"", "4242 postgres S 1", "4242 (postgres) S 1 2 3"} {
		if _, ok := parseStat(bad); ok {
			t.Errorf("%q was taken", bad)
		}
	}
	self, ok := ReadStat(os.Getpid())
	if !ok || self.PPID != os.Getppid() || self.State == "" {
		t.Fatalf("this process's stat: %+v, %v", self, ok)
	}
}
