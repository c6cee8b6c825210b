package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/loadgen"
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
	if !strings.Contains(stderr, "kbkit loadgen: wrote "+html+"\n") || !strings.Contains(stderr, "kbkit loadgen: wrote "+out+"\n") {
		t.Errorf("stderr does not say where the reports went:\n%s", stderr)
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
	t.Setenv(client.EnvURL, "")
	t.Setenv(client.EnvToken, "")
	for _, args := range [][]string{
		{"run", "--threshold", "commit<1s"},
		{"run", "--workload", "nope"},
		{"run", "--rate", "10", "--stage", "1s:5"},
		{"run", "--model", "closed", "--rate", "10"},
		{"run", "--commands", "grpc"},
		{"run", "--commands", ""},
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

func writeResult(t *testing.T, path string, commit time.Duration) {
	t.Helper()
	rec := metrics.NewRecorder()
	t0 := time.Unix(1_700_000_000, 0)
	for i := 0; i < 200; i++ {
		now := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		rec.Latency(metrics.Commit, now, commit)
		rec.Count(metrics.Committed, now, 1)
		rec.TypeCount("edit-text", metrics.Commands)
		rec.TypeLatency("edit-text", metrics.Commit, commit)
	}
	res, err := metrics.Collect([]*metrics.Recorder{rec})
	if err != nil {
		t.Fatal(err)
	}
	res.Start, res.End, res.Shards = t0, t0.Add(2*time.Second), []string{"0/1"}
	res.Run = metrics.RunInfo{Workload: "typing", Model: "closed", Editors: 1, Pages: 1, WindowsPerPage: 1, Duration: "2s", Server: "embedded"}
	if err := res.WriteFile(path); err != nil {
		t.Fatal(err)
	}
}

// TestCompare: two results side by side on stdout and in HTML, the faster
// marked; bad input exits 2 and writes no page.
func TestCompare(t *testing.T) {
	dir := t.TempDir()
	fast, slow, page := filepath.Join(dir, "fast.json"), filepath.Join(dir, "slow.json"), filepath.Join(dir, "cmp.html")
	writeResult(t, fast, 2*time.Millisecond)
	writeResult(t, slow, 8*time.Millisecond)
	code, stdout, stderr := kbkitLoadgen(t, "compare", fast, slow, "--html", page)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !regexp.MustCompile(`commit p99 +2\.00ms +8\.00ms +\+6\.00ms \(\+300\.\d%\) +A`).MatchString(stdout) {
		t.Errorf("stdout:\n%s", stdout)
	}
	if b, err := os.ReadFile(page); err != nil || !strings.Contains(string(b), `<tr data-better="A"><td>commit p99</td>`) {
		t.Errorf("page: %v", err)
	}
	if stderr != "kbkit loadgen compare: wrote "+page+"\n" {
		t.Errorf("stderr %q, want only where the page went", stderr)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"version":1,"nope":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.html")
	for _, args := range [][]string{{"compare", fast}, {"compare", fast, bad, "--html", other}, {"compare", "/nonexistent.json", fast, "--html", other}} {
		if code, _, _ := kbkitLoadgen(t, args...); code != ExitErrored {
			t.Errorf("%v: exit %d, want %d", args, code, ExitErrored)
		}
	}
	if _, err := os.Stat(other); err == nil {
		t.Error("a failed compare wrote its page")
	}
}

// The live console's first frame, before any window is open, says that
// it is setting up rather than "0 windows on 0 pages".
func TestConsoleFirstFrame(t *testing.T) {
	if got := rateLine(loadgen.Status{}); strings.Contains(got, "0 windows") || !strings.Contains(got, "setting up") {
		t.Errorf("first frame: %q", got)
	}
	if got := rateLine(loadgen.Status{Phase: "load", Windows: 4, Pages: 1}); !strings.Contains(got, "4 windows on 1 page") {
		t.Errorf("load frame: %q", got)
	}
}
