package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/subspace/kbkit/internal/procs"
)

// TestServeUnderGoRunEndsWithIt is the README's pattern `go run
// ./cmd/kbkit serve > server.json &` then `kill $!`: go run does not pass
// the SIGTERM on, so the compiled server must notice that its parent is
// gone and shut down, its throwaway Postgres included, freeing the port.
// Real processes (the go command compiles kbkit); every deadline is a hang
// detector.
func TestServeUnderGoRunEndsWithIt(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: compiles kbkit and starts Postgres")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := harnessDir(t)                                                     // TMPDIR: go run's build directory and Postgres's
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute) // hang detector: a cold compile on a busy machine
	defer cancel()
	cmd := exec.Command(gobin, "run", "./cmd/kbkit", "serve", "--addr", "127.0.0.1:0")
	cmd.Dir = root
	cmd.Env = withoutEnv(os.Environ(), envMain)
	logPath := filepath.Join(t.TempDir(), "serve.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd.Stderr = logFile // a file: Wait does not wait for the server's end of a pipe
	defer func() {
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("go run kbkit serve's stderr:\n%s", b)
		}
	}()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	goRun := cmd.Process.Pid
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	t.Cleanup(func() {
		for _, pid := range procs.Descendants(goRun) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		_ = cmd.Process.Kill()
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var info struct {
		URL string `json:"url"`
	}
	select {
	case line, ok := <-lines:
		if !ok || json.Unmarshal([]byte(line), &info) != nil || info.URL == "" {
			t.Fatalf("go run kbkit serve printed no JSON line: %q", line)
		}
	case err := <-waited:
		t.Fatalf("go run kbkit serve ended before serving: %v", err)
	case <-ctx.Done():
		t.Fatal("go run kbkit serve did not print its JSON line (hang)")
	}
	var server int
	for _, pid := range procs.Descendants(goRun) {
		if st, ok := procs.ReadStat(pid); ok && st.Comm == "kbkit" {
			server = pid
		}
	}
	if server == 0 {
		t.Fatalf("no kbkit process under go run (pid %d)", goRun)
	}

	// kill $!
	if err := syscall.Kill(goRun, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-waited
	stopped, cancelStop := context.WithTimeout(context.Background(), 3*time.Minute) // hang detector: a drain and Postgres's stop
	defer cancelStop()
	for alive(server) {
		select {
		case <-stopped.Done():
			t.Fatalf("kbkit serve (pid %d) is still running after its go run was killed", server)
		case <-time.After(100 * time.Millisecond):
		}
	}
	u, err := url.Parse(info.URL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", u.Host)
	if err != nil {
		t.Errorf("the server's port is still taken: %v", err)
	} else {
		ln.Close()
	}
	noLeftovers(t, dir, "kill of go run kbkit serve")
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	st, ok := procs.ReadStat(pid)
	return ok && st.State != "Z"
}

func withoutEnv(env []string, key string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// TestServeBusyPortNamesTheFlag: a port already taken exits 2 at once
// (before Postgres) and says which flag chooses another.
func TestServeBusyPortNamesTheFlag(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	code, _, errs := kbkitProcess(t, "serve", "--addr", ln.Addr().String())
	if code != exitErrored {
		t.Fatalf("exit %d, want %d\n%s", code, exitErrored, errs)
	}
	for _, want := range []string{"address already in use", "--addr HOST:PORT", "port 0 picks a free one"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr does not say %q:\n%s", want, errs)
		}
	}
}
