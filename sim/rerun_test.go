package sim

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/subspace/kbkit/sim/broken"
)

// Choice files are never overwritten: WriteChoices refuses a file that
// exists, and WriteChoicesIn picks a name no file in the directory has,
// so two runs writing into one directory keep each other's files.
func TestChoiceFilesAreNeverOverwritten(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Steps: 7}
	a, err := WriteChoicesIn(dir, "seed-4", opts, 4, []int{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	b, err := WriteChoicesIn(dir, "seed-4", opts, 4, []int{5, 6})
	if err != nil {
		t.Fatal(err)
	}
	if a == b || filepath.Base(a) != "seed-4.choices.json" || filepath.Base(b) != "seed-4-2.choices.json" {
		t.Fatalf("two writes of seed 4 went to %s and %s", a, b)
	}
	for path, want := range map[string][]int{a: {1, 2, 3}, b: {5, 6}} {
		got, err := ReadChoices(path)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s holds %v (%v), want %v", path, got, err, want)
		}
	}
	if err := WriteChoices(a, opts, 4, []int{9}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("WriteChoices over an existing file: %v, want fs.ErrExist", err)
	}
	if got, _ := ReadChoices(a); !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("the refused write changed %s: %v", a, got)
	}
}

// A failure that names one window reports that window's own events around
// its finding, not the page's last events (which belong to other windows).
func TestFailureHistoryFollowsTheFailingWindow(t *testing.T) {
	var hist []string
	for i := range 200 {
		hist = append(hist, "0.100s w0 echo "+string(rune('a'+i%26)))
		if i == 50 {
			hist = append(hist, "0.100s w2 (node a.mjs) intent edit x -> seq 4, 1 pending", "0.100s restarting instance 0 (fault)")
		}
		if i == 60 {
			hist = append(hist, "0.100s FINDING rollback: w2 (node a.mjs) still holds rejected command ab12cd34")
		}
		if i == 70 {
			hist = append(hist, "0.100s w2 (node a.mjs) toast rejected ab12cd34")
		}
	}
	r := SeedReport{History: hist, Checks: []CheckResult{{Name: CheckRollback, Detail: "w2 (node a.mjs) still holds rejected command ab12cd34"}}}
	h, what := FailureHistory(r, 40)
	if !strings.Contains(what, "w2") || len(h) != 4 || !strings.Contains(h[2], "FINDING") || !strings.Contains(h[3], "toast") {
		t.Errorf("%s:\n%s", what, strings.Join(h, "\n"))
	}
	r.Checks[0].Detail = "w2 and w0 differ"
	if h, what := FailureHistory(r, 40); len(h) != 40 || h[39] != hist[len(hist)-1] || !strings.Contains(what, "last 40") {
		t.Errorf("a finding on two windows: %s:\n%s", what, strings.Join(h, "\n"))
	}
}

// A deterministic server bug fails every replay of its choices (k of k);
// the same failure against a server that does not repeat it is reported
// as not reproducible, and the shrinker gives up on it at once, saying
// so, instead of spending its budget.
func TestRerunCountsRecurrence(t *testing.T) {
	e := embedded(t, EmbeddedOptions{Instances: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	fresh := func() (Target, func(), error) { return broken.New(e, "reorder") }
	opts := Options{Faults: true, Steps: 40, Windows: 3, EchoTimeout: time.Second}
	b, stop, err := fresh()
	if err != nil {
		t.Fatal(err)
	}
	rep := RunSeed(ctx, b, opts, 1)
	stop()
	if rep.Err != "" || !rep.Failed() {
		t.Fatalf("seed 1 behind reorder did not fail (%s): %v", rep.Err, failedCheckers(rep))
	}
	flaky := rep

	Rerun(ctx, e, opts, &rep, 2, fresh)
	if rep.Runs != 3 || rep.FailedRuns != 3 || rep.Recurrence() != "failed 3 of 3" {
		t.Errorf("behind reorder every time: %q (%d of %d)", rep.Recurrence(), rep.FailedRuns, rep.Runs)
	}

	// The replays reach the server without the proxy: the bug is gone,
	// as a timing-dependent one is under replay.
	Rerun(ctx, e, opts, &flaky, 2, nil)
	if want := "failed 1 of 3: not reproducible, timing-dependent"; flaky.Recurrence() != want {
		t.Errorf("replayed without the bug: %q, want %q", flaky.Recurrence(), want)
	}
	res, err := Shrink(ctx, e, opts, flaky, ShrinkOptions{Budget: time.Minute, ChoicesDir: t.TempDir()})
	if !errors.Is(err, ErrNotReproduced) || res.Runs != 0 || !strings.Contains(res.NotShrunk, "does not recur under replay") ||
		res.Summary().NotShrunk != res.NotShrunk {
		t.Errorf("shrinking the failure that did not recur: %v, %d runs, %q", err, res.Runs, res.NotShrunk)
	}
	// Without reruns, the shrinker's one replay of the seed tells it.
	flaky.Runs, flaky.FailedRuns = 0, 0
	res, err = Shrink(ctx, e, opts, flaky, ShrinkOptions{Budget: time.Minute, Runs: 3})
	if !errors.Is(err, ErrNotReproduced) || res.Runs != 1 || res.NotShrunk == "" {
		t.Errorf("shrinking without reruns: %v, %d runs, %q", err, res.Runs, res.NotShrunk)
	}
	if entries, _ := os.ReadDir("."); slices.ContainsFunc(entries, func(d os.DirEntry) bool { return strings.HasSuffix(d.Name(), ".choices.json") }) {
		t.Errorf("a choice file was written into the working directory")
	}
}
