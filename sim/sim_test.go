package sim

import (
	"context"
	"flag"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/server/pgprovider"
	"pgregory.net/rapid"
)

func TestMain(m *testing.M) { os.Exit(pgprovider.RunTests(m)) }

func embedded(t *testing.T, opts EmbeddedOptions) *Embedded {
	t.Helper()
	e, err := NewEmbedded(context.Background(), pgprovider.ForTest(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

func TestReferenceServerPasses(t *testing.T) {
	e := embedded(t, EmbeddedOptions{})
	Run(t, e, Options{Seed: 1, Seeds: 4, Steps: 120, Faults: true, OutDir: t.TempDir()})
}

func TestReferenceServerPassesWithoutFaults(t *testing.T) {
	e := embedded(t, EmbeddedOptions{Instances: 1})
	Run(t, e, Options{Seed: 100, Seeds: 2, Steps: 120})
}

func TestSimulatorExercisesFaults(t *testing.T) {
	e := embedded(t, EmbeddedOptions{})
	reports := Run(t, e, Options{Seed: 7, Seeds: 3, Steps: 150, Faults: true})
	var total Stats
	for _, r := range reports {
		t.Logf("seed %d: %s\n  %+v", r.Seed, r.Faults, r.Stats)
		if want := r.Stats.counted(); !strings.HasSuffix(r.Faults, want) {
			t.Errorf("seed %d: the faults line %q does not end with what the seed counted %q", r.Seed, r.Faults, want)
		}
		total.Commands += r.Stats.Commands
		total.Committed += r.Stats.Committed
		total.Rejected += r.Stats.Rejected
		total.Refetches += r.Stats.Refetches
		total.Dropped += r.Stats.Dropped
	}
	if total.Committed == 0 || total.Rejected == 0 {
		t.Errorf("the runs should commit and reject commands: %+v", total)
	}
	if total.Dropped > 0 && total.Refetches == 0 {
		t.Errorf("dropped echoes never led to a refetch: %+v", total)
	}
}

// TestRapidSimulator lets rapid draw the shape of a run (windows, pages,
// devices, steps, faults, seed); a failure shrinks to the smallest shape
// that still fails, and rapid keeps it under testdata/rapid, where every
// later run replays it first.
func TestRapidSimulator(t *testing.T) {
	e := embedded(t, EmbeddedOptions{})
	rapid.Check(t, func(rt *rapid.T) {
		opts := Options{
			Windows: rapid.IntRange(1, 5).Draw(rt, "windows"),
			Pages:   rapid.IntRange(1, 3).Draw(rt, "pages"),
			Devices: rapid.IntRange(1, 3).Draw(rt, "devices"),
			Steps:   rapid.IntRange(5, 60).Draw(rt, "steps"),
			Faults:  rapid.Bool().Draw(rt, "faults"),
		}
		seed := rapid.Int64Range(1, 1<<40).Draw(rt, "seed")
		r := RunSeed(context.Background(), e, opts, seed)
		if r.Err != "" {
			rt.Fatalf("seed %d could not run: %s", seed, r.Err)
		}
		for _, c := range r.Checks {
			if !c.Passed {
				rt.Fatalf("seed %d %+v: %s failed:\n%s\n%s", seed, opts, c.Name, c.Detail, tail(r.History, 30))
			}
		}
	})
}

// TestSeedReplaysExactly runs seeds twice: the scheduler's decisions, the
// faults and so every count must come out the same.
func TestSeedReplaysExactly(t *testing.T) {
	e := embedded(t, EmbeddedOptions{})
	for _, seed := range []int64{3, 11} {
		opts := Options{Steps: 150, Faults: true}
		a := RunSeed(context.Background(), e, opts, seed)
		b := RunSeed(context.Background(), e, opts, seed)
		if a.Err != "" || b.Err != "" {
			t.Fatalf("seed %d could not run: %q %q", seed, a.Err, b.Err)
		}
		if a.Stats != b.Stats || a.Faults != b.Faults {
			t.Errorf("seed %d does not replay:\n%+v %s\n%+v %s", seed, a.Stats, a.Faults, b.Stats, b.Faults)
		}
	}
}

// TestBurstsGroupCommit posts several windows' commands at once: the server
// decides them in group transactions, and every checker still passes.
func TestBurstsGroupCommit(t *testing.T) {
	e := embedded(t, EmbeddedOptions{Instances: 1})
	Run(t, e, Options{Seed: 40, Seeds: 4, Windows: 8, Pages: 1, Steps: 150, Bursts: true, Faults: true})
	if g := e.GroupCommits(); g.Batches == 0 {
		t.Fatalf("bursts formed no group transaction: %+v", g)
	} else {
		t.Logf("group commits: %+v", g)
	}
}

// Run honours Options.Parallel: two seeds at once take less wall time
// than the two seeds' durations added up (run one after the other they
// cannot), and the reports come back in seed order.
func TestRunRunsSeedsInParallel(t *testing.T) {
	if f := flag.Lookup("test.parallel"); runtime.GOMAXPROCS(0) < 2 || (f != nil && f.Value.String() == "1") {
		t.Skip("needs -parallel 2 or more")
	}
	e := embedded(t, EmbeddedOptions{Instances: 1})
	start := time.Now()
	reports := Run(t, e, Options{Seed: 200, Seeds: 2, Steps: 150, Parallel: 2})
	wall := time.Since(start)
	if len(reports) != 2 || reports[0].Seed != 200 || reports[1].Seed != 201 {
		t.Fatalf("reports %+v", reports)
	}
	if sum := reports[0].Duration + reports[1].Duration; wall >= sum {
		t.Errorf("2 seeds with Parallel 2 took %s, their durations add up to %s: they did not overlap", wall, sum)
	}
}

// TestSchedulerDrawsEveryType: over a run of 30 seeds the scheduler
// sends every command type of the registry (kbcore.Types) over the wire (table and code
// nodes with set-cell and set-outputs, set-aliases, merges regretted by
// restore-page, ...), and with faults it makes the server reject
// commands whose answers are lost: refetches report the rejections in
// their outcomes, and retries are answered with the rejection again.
// Thirty seeds hold each of these several times over (the rarest type,
// outdent, is sent in about one seed of five): a run of 100 proved
// nothing more, in three times as long.
func TestSchedulerDrawsEveryType(t *testing.T) {
	const seeds = 30
	e := embedded(t, EmbeddedOptions{})
	reports, err := RunSeeds(context.Background(), e, Options{Seeds: seeds, Steps: 100, Faults: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != seeds {
		t.Fatalf("%d seeds ran, want %d", len(reports), seeds)
	}
	types := map[string]int{}
	var total Stats
	for _, r := range reports {
		if r.Err != "" || r.Failed() {
			t.Errorf("seed %d: err %q, failed %v", r.Seed, r.Err, failedCheckers(r))
		}
		for typ, n := range r.Types {
			types[typ] += n
		}
		total.RejectedOutcomes += r.Stats.RejectedOutcomes
		total.RetriedRejections += r.Stats.RetriedRejections
		total.Duplicates += r.Stats.Duplicates
		total.Refetches += r.Stats.Refetches
	}
	t.Logf("sent by type: %v", types)
	t.Logf("rejected outcomes %d, retried rejections %d, duplicate acks %d, refetches %d",
		total.RejectedOutcomes, total.RetriedRejections, total.Duplicates, total.Refetches)
	for _, typ := range kbcore.Types {
		if types[typ] == 0 {
			t.Errorf("no %s was sent in %d seeds", typ, seeds)
		}
	}
	if total.RejectedOutcomes == 0 {
		t.Error("no refetch reported a rejection in its outcomes")
	}
	if total.RetriedRejections == 0 {
		t.Error("no retry of a rejected id was answered with its rejection")
	}
	if total.Duplicates == 0 {
		t.Error("no retry of a committed id was answered duplicate")
	}
	for _, c := range Skipped(reports) {
		t.Errorf("checker %s was skipped by every seed", c)
	}
}
