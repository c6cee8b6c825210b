package loadgen

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/loadgen/metrics"
	"github.com/subspace/kbkit/loadgen/plan"
	"github.com/subspace/kbkit/loadgen/workload"
	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/target"
)

func TestMain(m *testing.M) { os.Exit(pgprovider.RunTests(m)) }

func embedded(t *testing.T) *target.Embedded {
	t.Helper()
	e, err := target.NewEmbedded(context.Background(), pgprovider.ForTest(t), target.EmbeddedOptions{Instances: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

func checkRun(t *testing.T, res *metrics.Result, windows int) {
	t.Helper()
	for _, n := range []string{metrics.Commit, metrics.Echo, metrics.Fanout} {
		if res.Hist(n).Count() == 0 {
			t.Errorf("no %s latency recorded", n)
		}
	}
	if got := res.Hist(metrics.Convergence).Count(); got != int64(windows) {
		t.Errorf("%d windows converged, want %d (errors %v)", got, windows, res.Errors)
	}
	if res.Counts.Errors != 0 {
		t.Errorf("errors: %v", res.Errors)
	}
	if res.Counts.Connects != int64(windows) {
		t.Errorf("%d connects, want %d", res.Counts.Connects, windows)
	}
	if res.Counts.Committed == 0 || len(res.Intervals) == 0 {
		t.Errorf("counts %+v, %d intervals", res.Counts, len(res.Intervals))
	}
}

// TestEveryWorkloadRuns: a short closed-model run of each workload
// against the reference server commits commands and measures commit,
// echo and fan-out, and every window converges.
func TestEveryWorkloadRuns(t *testing.T) {
	e := embedded(t)
	for _, name := range workload.Names() {
		t.Run(name, func(t *testing.T) {
			spec, _ := workload.Named(name)
			if name == "many-pages" {
				spec.Pages = 12
			}
			cfg := Config{Workload: spec, Editors: 6, Duration: 2 * time.Second, Seed: 1}
			res, err := Run(context.Background(), e, cfg)
			if err != nil {
				t.Fatal(err)
			}
			pages, perPage := spec.Layout(6)
			checkRun(t, res, pages*perPage)
			t.Logf("%s: %d committed, %d rejected %v; commit p99 %s, fanout p99 %s",
				name, res.Counts.Committed, res.Counts.Rejections, res.Rejections,
				res.Hist(metrics.Commit).Quantile(99), res.Hist(metrics.Fanout).Quantile(99))
		})
	}
}

// TestOpenModelRun: the open model offers operations at the rate and
// counts each as due; what it could not start is dropped. The warm-up
// runs first and is not counted.
func TestOpenModelRun(t *testing.T) {
	e := embedded(t)
	spec, _ := workload.Named("hot-page")
	cfg := Config{Workload: spec, Model: Open, Pacer: Constant(50), Editors: 5, Duration: 2 * time.Second, Seed: 2,
		Warmup: time.Second}
	before := time.Now()
	res, err := Run(context.Background(), e, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkRun(t, res, 5)
	if res.Start.Sub(before) < time.Second {
		t.Errorf("the measured load started %s after the run, before the warm-up ended", res.Start.Sub(before))
	}
	if res.Counts.Due != 100 {
		t.Errorf("due = %d, want 100", res.Counts.Due)
	}
	if started := res.Counts.Commands; started+res.Counts.Dropped != res.Counts.Due {
		t.Errorf("%d started + %d dropped != %d due", started, res.Counts.Dropped, res.Counts.Due)
	}
	checkCounts(t, res, 5)
}

// checkCounts: every measured operation has one outcome, and every
// committed command was applied once by each window of its page (one
// page, one process: nothing of the warm-up is counted).
func checkCounts(t *testing.T, res *metrics.Result, windows int64) {
	t.Helper()
	c := res.Counts
	if c.Commands != c.Committed+c.Rejections+c.LocalRejections+c.Errors {
		t.Errorf("%d operations != %d committed + %d rejected + %d refused + %d errors", c.Commands, c.Committed, c.Rejections, c.LocalRejections, c.Errors)
	}
	if c.Echoes != c.Committed*windows {
		t.Errorf("%d events applied != %d committed × %d windows", c.Echoes, c.Committed, windows)
	}
}

// TestClosedModelCountsAfterWarmup: with a warm-up in the closed model,
// commands still in flight when the measurement starts (and their echoes)
// are not counted, so the counts agree.
func TestClosedModelCountsAfterWarmup(t *testing.T) {
	e := embedded(t)
	spec, _ := workload.Named("hot-page")
	cfg := Config{Workload: spec, Model: Closed, Editors: 4, Duration: 2 * time.Second, Seed: 3, Warmup: time.Second}
	res, err := Run(context.Background(), e, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkRun(t, res, 4)
	checkCounts(t, res, 4)
}

// TestShardsShareARun: two shards against one server lay out the same
// pages, split the editors, and their results merge. What is judged is
// decided once both have ended, whatever their pace: each shard's windows
// converged, and the page the shards shared holds every command either
// committed (its seq counts both shards' commands). How many of the other
// shard's events a window happened to apply while measuring depends on
// how the two shards' load overlapped on a busy machine, and is not
// judged.
func TestShardsShareARun(t *testing.T) {
	ctx := context.Background()
	e := embedded(t)
	tokens, err := e.Devices(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	target := target.Remote(e.Endpoints()[0], tokens)
	// Fan-out is measured between the windows of one process (the stamp
	// of a command stays where it was sent): put every editor on one page.
	spec, _ := workload.Named("hot-page")
	runID := "shared-" + t.Name()
	var wg sync.WaitGroup
	results := make([]*metrics.Result, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() {
			cfg := Config{Workload: spec, Editors: 8, Duration: 2 * time.Second, Seed: 3, RunID: runID,
				Shard: Shard{i, 2}}
			results[i], errs[i] = Run(ctx, target, cfg)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
		checkRun(t, results[i], 4) // 4 of the page's 8 windows
	}
	// Both shards laid the page out (a repeat is answered, not redone)
	// and wrote to it: its seq is the layout plus both shards' commands.
	p := plan.New(runID, spec, 8)
	if p.Pages != 1 {
		t.Fatalf("hot-page laid out %d pages for 8 editors, want 1", p.Pages)
	}
	snap, err := client.New(e.Endpoints()[0], tokens[0]).Page(ctx, p.PageID(0), nil)
	if err != nil {
		t.Fatal(err)
	}
	c0, c1 := results[0].Counts.Committed, results[1].Counts.Committed
	if want := int64(1+p.Nodes) + c0 + c1; snap.Seq != want {
		t.Errorf("the shared page is at seq %d, want %d: 1 create-page, %d seed nodes, %d + %d committed by the shards",
			snap.Seq, want, p.Nodes, c0, c1)
	}
	merged, err := metrics.Merge(results...)
	if err != nil {
		t.Fatal(err)
	}
	if merged.Counts.Committed != c0+c1 {
		t.Error("merged counts are not the sum")
	}
	if len(merged.Shards) != 2 {
		t.Errorf("shards %v", merged.Shards)
	}
	if len(merged.EditorsRan) != 8 || len(merged.MissingEditors()) != 0 {
		t.Errorf("editors ran %v, missing %v", merged.EditorsRan, merged.MissingEditors())
	}
}

// TestCountsAgree: after a warm-up, every measured operation has exactly
// one outcome and every committed one exactly one echo to its window. An
// operation begun in the warm-up and decided after it counted as committed
// but not as an operation ("300 operations, 304 committed").
func TestCountsAgree(t *testing.T) {
	e := embedded(t)
	spec, _ := workload.Named("hot-page")
	for _, cfg := range []Config{
		{Workload: spec, Editors: 6, Duration: 2 * time.Second, Warmup: time.Second, Seed: 4},
		{Workload: spec, Model: Open, Pacer: Constant(200), Editors: 6, Duration: 2 * time.Second, Warmup: time.Second, Seed: 5},
	} {
		res, err := Run(context.Background(), e, cfg)
		if err != nil {
			t.Fatal(err)
		}
		c := res.Counts
		if outcomes := c.Committed + c.Rejections + c.LocalRejections + c.Errors; outcomes != c.Commands {
			t.Errorf("%s: %d operations but %d outcomes (%+v)", cfg.Model, c.Commands, outcomes, c)
		}
		if echo := res.Hist(metrics.Echo).Count(); echo != c.Committed {
			t.Errorf("%s: %d echo latencies for %d committed", cfg.Model, echo, c.Committed)
		}
		if fan := res.Hist(metrics.Fanout).Count(); fan != 5*c.Committed {
			t.Errorf("%s: %d fan-out latencies for %d committed to 5 other windows (%+v, errors %v)", cfg.Model, fan, c.Committed, c, res.Errors)
		}
	}
}
