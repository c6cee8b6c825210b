package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/subspace/kbkit/loadgen/metrics"
	"github.com/subspace/kbkit/server/pgprovider"
)

func TestMain(m *testing.M) { os.Exit(pgprovider.RunTests(m)) }

func kbkitLoadgen(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestThresholdsSetTheExitCode: a short embedded run whose thresholds
// break exits 99; the JSON and the report keep the verdicts; a report
// with thresholds that hold exits 0.
func TestThresholdsSetTheExitCode(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "run.json")
	html := filepath.Join(dir, "run.html")
	code, stdout, stderr := kbkitLoadgen(t, "run", "--dsn", pgprovider.ForTest(t), "--workload", "hot-page",
		"--editors", "4", "--duration", "2s", "--quiet", "--json", out, "--html", html,
		"--threshold", "errors==0", "--threshold", "commit.count<1")
	if code != ExitThresholds {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitThresholds, stdout, stderr)
	}
	if !strings.Contains(stdout, "FAIL  commit.count<1") || !strings.Contains(stdout, "ok    errors==0") {
		t.Errorf("summary:\n%s", stdout)
	}
	res, err := metrics.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Checks) != 2 || !res.Checks[0].Pass || res.Checks[1].Pass {
		t.Errorf("checks %+v", res.Checks)
	}
	if fi, err := os.Stat(html); err != nil || fi.Size() < 1000 {
		t.Errorf("html report: %v", err)
	}

	// report re-evaluates the run's own thresholds by default...
	if code, stdout, _ := kbkitLoadgen(t, "report", out); code != ExitThresholds {
		t.Errorf("report: exit %d\n%s", code, stdout)
	}
	// ...or the ones it is given.
	if code, stdout, stderr := kbkitLoadgen(t, "report", out, "--threshold", "commit.p99<1h", "--threshold", "dropped==0"); code != ExitOK {
		t.Errorf("report: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

func TestBadInvocationsExit2(t *testing.T) {
	t.Setenv(envURL, "")
	t.Setenv(envToken, "")
	for _, args := range [][]string{
		{"run", "--threshold", "commit<1s"},
		{"run", "--workload", "nope"},
		{"run", "--rate", "10", "--stage", "1s:5"},
		{"run", "--model", "closed", "--rate", "10"},
		{"run", "--shard", "2/2"},
		{"run", "--shard", "0/2", "--server", "http://127.0.0.1:1", "--token", "x"}, // no --run-id
		{"run", "--server", "http://127.0.0.1:1"},                                   // no --token
		{"report", "/nonexistent.json"},
		{"idle"},
	} {
		if code, _, stderr := kbkitLoadgen(t, args...); code != ExitErrored {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, ExitErrored, stderr)
		}
	}
}
