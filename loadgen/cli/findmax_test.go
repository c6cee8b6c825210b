package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/subspace/kbkit/loadgen/findmax"
	"github.com/subspace/kbkit/server/pgprovider"
)

// TestFindMaxCommand: find-max against the embedded server ends on a
// rate that met the objective with a step above it that broke it, prints
// the table and the verdict, and writes the JSON, the page and each
// step's result.
func TestFindMaxCommand(t *testing.T) {
	dir := t.TempDir()
	js, html, steps := filepath.Join(dir, "max.json"), filepath.Join(dir, "max.html"), filepath.Join(dir, "steps")
	code, stdout, stderr := kbkitLoadgen(t, "find-max", "--dsn", pgprovider.ForTest(t), "--workload", "hot-page", "--editors", "4",
		"--start-rate", "6", "--step", "1s", "--warmup", "0s", "--resolution", "0.3", "--max-steps", "6",
		"--threshold", "committed<=10", "--json", js, "--html", html, "--dir", steps)
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	if code != ExitOK {
		t.Fatalf("exit %d, want 0", code)
	}
	for _, want := range []string{"objective: committed<=10, achieved>=0.9", "sustainable: ", "gen wait p99"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout has no %q", want)
		}
	}
	f, err := os.Open(js)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := findmax.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict.Sustainable < 6 || res.Run.Workload != "hot-page" || res.Run.Server != "embedded" {
		t.Errorf("verdict %+v, run %+v", res.Verdict, res.Run)
	}
	if res.Verdict.Next > 0 && !strings.Contains(stdout, "limited by ") {
		t.Errorf("a broken objective without what ran out:\n%s", stdout)
	}
	written, _ := filepath.Glob(filepath.Join(steps, "step-*.json"))
	if len(written) != len(res.Steps) || strings.Count(stderr, "  step ") != len(res.Steps) {
		t.Errorf("%d step files and %d step lines for %d steps", len(written), strings.Count(stderr, "  step "), len(res.Steps))
	}
	if fi, err := os.Stat(html); err != nil || fi.Size() < 2000 {
		t.Errorf("page: %v", err)
	}
}

// TestFindMaxRefusesBadFlags: bad flags exit 2 with a message before any
// server starts, and write nothing.
func TestFindMaxRefusesBadFlags(t *testing.T) {
	dir := t.TempDir()
	js := filepath.Join(dir, "max.json")
	for _, args := range [][]string{
		{"--start-rate", "0"},
		{"--start-rate", "100", "--max-rate", "50"},
		{"--resolution", "2"},
		{"--threshold", "commit<5"},
		{"--step", "0s"},
		{"--workload", "nope"},
		{"--server", "http://127.0.0.1:1"},
		{"--editors", "64", "--max-editors", "32"},
		{"--max-editors", "-1"},
	} {
		code, _, stderr := kbkitLoadgen(t, append([]string{"find-max", "--json", js}, args...)...)
		if code != ExitErrored || !strings.HasPrefix(stderr, "kbkit loadgen: ") {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
		if _, err := os.Stat(js); err == nil {
			t.Errorf("%v: wrote %s", args, js)
		}
	}
}

// TestFindMaxReadmeSaysTheEditorDefaults: loadgen/README.md's find-max
// section gives --editors' and --max-editors' defaults as the flags do.
func TestFindMaxReadmeSaysTheEditorDefaults(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	fl := newFindMaxCmd().Flags()
	for _, want := range []string{
		"(`--editors`, " + fl.Lookup("editors").DefValue + " at first)",
		"`--max-editors` (default " + fl.Lookup("max-editors").DefValue + ";",
	} {
		if !strings.Contains(strings.ReplaceAll(string(b), "\n", " "), want) {
			t.Errorf("loadgen/README.md does not say %q", want)
		}
	}
}
