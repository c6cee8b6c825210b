package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/subspace/kbkit/internal/longtest"
)

// exampleClient is the command line of the example client of
// examples/client-js (as sim's foreign tests find it): without node or
// its node_modules the test skips, unless KBKIT_REQUIRE_NODE is set.
func exampleClient(t *testing.T) string {
	t.Helper()
	require := os.Getenv("KBKIT_REQUIRE_NODE") != ""
	if _, err := exec.LookPath("node"); err != nil {
		if require {
			t.Fatal("node is not installed but KBKIT_REQUIRE_NODE is set")
		}
		t.Skip("node is not installed")
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "examples", "client-js"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@trpc", "client")); err != nil {
		if require {
			t.Fatalf("examples/client-js has no node_modules but KBKIT_REQUIRE_NODE is set: run npm ci there (%v)", err)
		}
		t.Skip("examples/client-js: run npm ci first")
	}
	return "node " + filepath.Join(dir, "adapter.mjs")
}

// A finding's replay line reproduces a deterministic client bug 3 times
// in 3: the example client that keeps a rejected command pending, beside
// two windows of the kit's (whose races make the server reject its
// commands), fails rollback; the run says of a seed that it failed 3 of
// 3, and that seed's replay line, run as printed three times, fails
// rollback each time.
func TestConformanceRunClientReplayReproduces(t *testing.T) {
	longtest.Mark(t) // seven runs of node clients, each on a Postgres of its own
	client := exampleClient(t) + " --broken keep-rejected"
	code, out, errs := kbkit(t, "", "conformance", "run", "--client", client, "--windows", "2", "--seeds", "3",
		"--echo-timeout", "2s", "--shrink=false", "--out", t.TempDir())
	if code != exitFailed || !checkerFailed(out, "rollback") {
		t.Fatalf("exit %d, want %d with rollback failing\nstdout:\n%s\nstderr:\n%s", code, exitFailed, out, errs)
	}
	// A rejection that comes of the kit's own race (a window deletes the
	// node the client then edits) recurs; one that comes of when the
	// client's post and another window's merge cross may not: the run
	// reports those as not reproducible. The test replays a seed the run
	// found deterministic.
	var m []string
	for _, block := range strings.Split(out, "\nseed ")[1:] {
		if m = regexp.MustCompile(`^(\d+) FAILED, failed 3 of 3 [\s\S]*\n  rollback:[\s\S]*\n  replay: (.*)`).FindStringSubmatch(block); m != nil {
			break
		}
	}
	if m == nil {
		t.Fatalf("no seed failed rollback 3 of 3 (with its replay line):\n%s", out)
	}
	if h := regexp.MustCompile(`history of (w\d+) around its finding`).FindStringSubmatch(out); h == nil || !strings.Contains(out, h[1]+" (node ") {
		t.Errorf("the history is not the client window's:\n%s", out)
	}
	line := m[2]
	t.Logf("replay: %s", line)
	for i := range 3 {
		args := append([]string{"conformance", "run"}, shellWords(t, line, nil)...)
		code, out, errs := kbkit(t, "", append(args, "--reruns", "0", "--out", t.TempDir())...)
		if code != exitFailed || !checkerFailed(out, "rollback") {
			t.Errorf("replay %d: exit %d, want %d with rollback failing\nstdout:\n%s\nstderr:\n%s", i+1, code, exitFailed, out, errs)
		}
	}
}
