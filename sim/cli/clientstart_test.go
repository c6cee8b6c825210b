package cli

import (
	"context"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientjs "github.com/subspace/kbkit/examples/client-js"
	"github.com/subspace/kbkit/internal/procs"
)

// countingServer is a --server that counts the requests it gets: a run
// whose client cannot start must send none (no page is created).
func countingServer(t *testing.T) (string, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		http.Error(w, "this run should not have reached the server", http.StatusTeapot)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &n
}

// A --client whose process cannot start, exits during init or never
// answers init ends the whole run (--seeds 100) with exit 2 and the
// adapter's own first stderr line, before the server gets a request.
// Real processes; the hang case ends by the adapter's init timeout, and
// the test's deadline only detects a hang of the run itself.
func TestClientThatCannotStartEndsTheRun(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, client string
		want         []string
	}{
		{"no such command", "kbkit-no-such-client-adapter --x", []string{`"kbkit-no-such-client-adapter"`, "executable file not found"}},
		{"exits 1 with an error", `sh -c 'echo "client: cannot reach the moon" >&2; echo more >&2; exit 1'`,
			[]string{`the adapter's first stderr line: "client: cannot reach the moon"`, "exit status 1"}},
		{"never answers init", "sh -c 'echo started >&2; exec sleep 600'", []string{"init", "no reply within", `the adapter's first stderr line: "started"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			url, requests := countingServer(t)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // hang detector
			defer cancel()
			code, out, errs := kbkitContext(ctx, t, "", "conformance", "run", "--server", url, "--token", "good", "--client", c.client,
				"--seeds", "100", "--faults", "--out", dir)
			if ctx.Err() != nil {
				t.Fatalf("the run did not end: %v\n%s", ctx.Err(), errs)
			}
			if code != exitErrored {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, exitErrored, out, errs)
			}
			last := lastLine(errs)
			if !strings.HasPrefix(last, "kbkit conformance run: could not run: --client ") {
				t.Errorf("the last line does not say the client could not start: %q", last)
			}
			for _, w := range c.want {
				if !strings.Contains(last, w) {
					t.Errorf("the last line does not say %s: %q", w, last)
				}
			}
			if n := requests.Load(); n != 0 {
				t.Errorf("the server got %d requests from a run whose client could not start", n)
			}
			if strings.Contains(errs, "seed 1") || out != "" {
				t.Errorf("seeds ran:\nstdout: %s\nstderr: %s", out, errs)
			}
			left, _ := procs.All()
			for _, p := range left {
				if strings.Contains(p.String(), "sleep 600") && isDescendant(p.PID) {
					t.Errorf("the adapter was left running: %s", p)
				}
			}
		})
	}
}

func isDescendant(pid int) bool {
	for _, d := range procs.Descendants(os.Getpid()) {
		if d == pid {
			return true
		}
	}
	return false
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// The example client without its dependencies (a fresh clone before npm
// ci) says in one line that npm ci is needed, and the run ends with that
// line. The client's files are copied without node_modules.
func TestExampleClientWithoutDependencies(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on PATH")
	}
	dir := t.TempDir()
	err = fs.WalkDir(clientjs.Files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(clientjs.Files, path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, path), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	url, requests := countingServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // hang detector
	defer cancel()
	code, _, errs := kbkitContext(ctx, t, "", "conformance", "run", "--server", url, "--token", "good",
		"--client", node+" "+filepath.Join(dir, "adapter.mjs"), "--seeds", "100", "--faults", "--out", t.TempDir())
	if code != exitErrored {
		t.Fatalf("exit %d, want %d\n%s", code, exitErrored, errs)
	}
	want := "run `npm ci` in " + dir + " first"
	if last := lastLine(errs); !strings.Contains(last, want) {
		t.Errorf("the last line does not say %q: %q", want, last)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the server got %d requests", n)
	}
}
