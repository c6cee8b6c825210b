package fuzz

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/subspace/kbkit/speckit/adapter"
	"github.com/subspace/kbkit/speckit/cases"
	"github.com/subspace/kbkit/speckit/report"
)

// A mutant is the reference with one line changed, the way an
// implementer could get it wrong: built as an adapter with
// `go build -overlay`, so kbcore itself is never touched.
type mutant struct {
	name, area string // area: the spec area the change is in
	suite      string // the suite that fuzzes it
	file       string // relative to the module root
	old, new   string // the line, before and after
}

var mutants = []mutant{
	{"create-page-keeps-aliases", "commands", "commands", "kbcore/apply.go",
		"t.d.page.Title, t.d.page.Dir, t.d.page.Aliases = title, deref(p.Dir), []string{}", "t.d.page.Title, t.d.page.Dir = title, deref(p.Dir)"},
	{"label-value-untrimmed-cr", "tokenizer", "tokenizer", "kbcore/token/label.go",
		`if e := strings.IndexAny(rest, "\r\n"); e >= 0 {`, `if e := strings.IndexAny(rest, "\n"); e >= 0 {`},
	{"snapshot-seq-0-commits", "window", "window", "kbcore/window.go",
		"case ok && o.Seq > 0 && o.Seq <= seq:", "case ok && o.Seq <= seq:"},
	{"self-alias-link-creates-page", "planner", "planner", "kbcore/plan.go",
		"ok && (own.page.Title == t || contains(own.page.Aliases, t))", "ok && own.page.Title == t"},
	{"rank-after-Zz", "ranks", "commands", "kbcore/rank/rank.go",
		`return "a0", true`, `return "a1", true`},
}

// moduleRoot is the directory of go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", root, err)
	}
	return root
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// buildAdapter builds internal/refadapter, with m's line changed unless m
// is nil, and returns the binary.
func buildAdapter(t *testing.T, m *mutant) string {
	t.Helper()
	root, dir := moduleRoot(t), t.TempDir()
	bin := filepath.Join(dir, "adapter")
	args := []string{"build", "-o", bin}
	if m != nil {
		src, err := os.ReadFile(filepath.Join(root, m.file))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(src), m.old); n != 1 {
			t.Fatalf("mutant %s: %q occurs %d times in %s, want once (update the mutant)", m.name, m.old, n, m.file)
		}
		patched := filepath.Join(dir, filepath.Base(m.file))
		if err := os.WriteFile(patched, []byte(strings.Replace(string(src), m.old, m.new, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		ov, _ := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(root, m.file): patched}})
		overlay := filepath.Join(dir, "overlay.json")
		if err := os.WriteFile(overlay, ov, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-overlay", overlay)
	}
	cmd := exec.Command(goTool(), append(args, "./speckit/fuzz/internal/refadapter")...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func startAdapter(t *testing.T, argv ...string) *adapter.Client {
	t.Helper()
	var stderr bytes.Buffer
	c, err := adapter.Start(context.Background(), argv, adapter.Options{Timeout: 10 * time.Second, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		if stderr.Len() > 0 {
			t.Logf("adapter stderr:\n%s", stderr.String())
		}
	})
	return c
}

// TestFuzzFindsPlantedDivergences: for each mutant, fuzzing the suite of
// its area finds a difference and shrinks it to a small case that the
// case runner passes against the reference and fails against the mutant.
func TestFuzzFindsPlantedDivergences(t *testing.T) {
	for _, m := range mutants {
		t.Run(m.name, func(t *testing.T) {
			c := startAdapter(t, buildAdapter(t, &m))
			// Shrinking is bounded by trials, not time, so that its result
			// does not depend on the machine's load.
			rep, err := Run(context.Background(), Options{Impl: c, Suites: []string{m.suite}, Seed: 1,
				Duration: 60 * time.Second, MaxDifferences: 1, ShrinkTime: time.Hour, ShrinkTests: 5000})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Differences) == 0 {
				t.Fatalf("no difference in %d inputs (%v)", rep.Inputs, rep.Elapsed)
			}
			d := rep.Differences[0]
			t.Logf("%s (%s): found at input %d after %v; shrunk from %d choices / %d bytes to %d / %d in %v (%d trials)\n%s\n%s",
				m.name, d.Area, d.Input, d.FoundAfter.Round(time.Millisecond), d.Original.Choices, d.Original.Bytes,
				d.Shrunk.Choices, d.Shrunk.Bytes, d.ShrinkTime.Round(time.Millisecond), d.ShrinkTests, d.Outcome.Diff, CaseYAML(d.Case))
			if d.Shrunk.Choices >= d.Original.Choices || d.Shrunk.Bytes > d.Original.Bytes {
				t.Errorf("not shrunk: %+v to %+v", d.Original, d.Shrunk)
			}
			file, err := cases.Parse("fuzz.yaml", []byte(CaseFile(d.Case)))
			if err != nil {
				t.Fatalf("the printed case does not load: %v", err)
			}
			printed := file.Cases[0]
			if o := cases.Check(context.Background(), cases.Reference{}, printed); o.Status != cases.Pass {
				t.Errorf("the printed case against the reference: %s %s", o.Status, o.Diff)
			}
			if o := cases.Check(context.Background(), c, printed); o.Status != cases.Fail {
				t.Errorf("the printed case against the mutant: %s, want fail", o.Status)
			}
		})
	}
}

// TestFuzzUnalteredAdapterAgrees: the reference adapter, unaltered and
// through the real protocol, differs from the reference on no input.
func TestFuzzUnalteredAdapterAgrees(t *testing.T) {
	c := startAdapter(t, buildAdapter(t, nil))
	n := 4000
	if testing.Short() {
		n = 800
	}
	rep, err := Run(context.Background(), Options{Impl: c, Suites: c.Info().Suites, Seed: 2, Count: n})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range rep.Differences {
		t.Errorf("%s: %s\n%s", d.Case.ID, d.Outcome.Diff, CaseYAML(d.Case))
	}
	for s, st := range rep.Suites {
		if st.Same != st.Inputs-st.Invalid {
			t.Errorf("%s: %+v", s, *st)
		}
	}
	t.Logf("%d inputs in %v (%.0f/s), 0 differences", rep.Inputs, rep.Elapsed.Round(time.Millisecond), float64(rep.Inputs)/rep.Elapsed.Seconds())
}

// TestFuzzNodeAdapter fuzzes the example Node adapter for what it
// implements (the tokenizer and edit-text; its expectations file skips the
// rest, as for `spec run`): no difference at all.
func TestFuzzNodeAdapter(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("KBKIT_REQUIRE_NODE") != "" {
			t.Fatal("node is not installed but KBKIT_REQUIRE_NODE is set")
		}
		t.Skip("node is not installed")
	}
	dir := filepath.Join(moduleRoot(t), "speckit", "adapters", "node")
	c := startAdapter(t, "node", filepath.Join(dir, "adapter.mjs"))
	expect, err := report.LoadExpectations(filepath.Join(dir, "expectations.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	n := 6000
	if testing.Short() {
		n = 1000
	}
	rep, err := Run(context.Background(), Options{Impl: c, Suites: c.Info().Suites, Commands: c.Info().Commands,
		Seed: 3, Count: n, Expect: expect})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range rep.Differences {
		t.Errorf("%s: %s\n%s", d.Case.ID, d.Outcome.Diff, CaseYAML(d.Case))
	}
	for _, s := range rep.suiteNames() {
		st := rep.Suites[s]
		t.Logf("%s: %s", s, st)
		if st.Same < st.Inputs/2 {
			t.Errorf("%s: too few inputs compared", s)
		}
	}
	t.Logf("%d inputs in %v (%.0f/s)", rep.Inputs, rep.Elapsed.Round(time.Millisecond), float64(rep.Inputs)/rep.Elapsed.Seconds())
}
