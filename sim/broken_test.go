package sim

import (
	"context"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/subspace/kbkit/sim/broken"
)

// The simulator must catch bugs: each test runs it against the reference
// server behind a mutating proxy (sim/broken) that breaks one guarantee of
// the protocol, and asserts that the checker guarding that guarantee
// fails. The control runs the same proxy without a mutation.

// mutatedRun is one seed run behind its own proxy.
type mutatedRun struct {
	SeedReport
	fired int64 // mutations the proxy made during the seed
}

// runMutated runs each seed against one embedded server, each behind its
// own proxy with a fresh newMut() (so that what the proxy did is counted
// per seed), the seeds in parallel, and logs each seed's failing checkers.
func runMutated(t *testing.T, newMut func() broken.Mutation, opts Options, seeds ...int64) []mutatedRun {
	t.Helper()
	e := embedded(t, EmbeddedOptions{})
	if opts.EchoTimeout == 0 {
		// Broken servers make windows wait for echoes that never come.
		opts.EchoTimeout = time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	runs := make([]mutatedRun, len(seeds))
	var wg sync.WaitGroup
	for i, seed := range seeds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mut := newMut()
			p := broken.NewProxy(e, mut)
			defer p.Close()
			runs[i].SeedReport = RunSeed(ctx, p, opts, seed)
			runs[i].fired = mut.Fired()
		}()
	}
	wg.Wait()
	for _, r := range runs {
		if r.Err != "" {
			t.Fatalf("seed %d could not run: %s\n%s", r.Seed, r.Err, tail(r.History, 30))
		}
		t.Logf("seed %d: %d mutations, failed %v (%s; %+v)", r.Seed, r.fired, failedCheckers(r.SeedReport), r.Faults, r.Stats)
		if os.Getenv("KBKIT_BROKEN_DEBUG") != "" { // every failing checker's findings
			for _, c := range r.Checks {
				if !c.Passed {
					t.Logf("  %s:\n%s", c.Name, c.Detail)
				}
			}
		}
	}
	t.Logf("%d seeds in %s", len(runs), time.Since(start).Round(time.Millisecond))
	return runs
}

func seedRange(from int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = from + int64(i)
	}
	return out
}

func failedCheckers(r SeedReport) []string {
	var out []string
	for _, c := range r.Checks {
		if !c.Passed {
			out = append(out, c.Name)
		}
	}
	return out
}

// caughtBy returns the seeds on which checker failed.
func caughtBy(runs []mutatedRun, checker string) []int64 {
	var seeds []int64
	for _, r := range runs {
		for _, c := range r.Checks {
			if c.Name == checker && !c.Passed {
				seeds = append(seeds, r.Seed)
			}
		}
	}
	return seeds
}

// exercised returns the seeds on which the proxy mutated something.
func exercised(runs []mutatedRun) []int64 {
	var seeds []int64
	for _, r := range runs {
		if r.fired > 0 {
			seeds = append(seeds, r.Seed)
		}
	}
	return seeds
}

// requireExercised fails the test unless the proxy broke something on at
// least one seed: a variant that never fired proves nothing.
func requireExercised(t *testing.T, runs []mutatedRun) {
	t.Helper()
	if len(exercised(runs)) == 0 {
		t.Fatalf("the mutation never fired on %d seeds: the runs did not exercise the bug", len(runs))
	}
}

// requireCaught fails the test unless checker failed on at least one
// seed; it logs the checker's findings on the first such seed.
func requireCaught(t *testing.T, runs []mutatedRun, checker string) {
	t.Helper()
	seeds := caughtBy(runs, checker)
	if len(seeds) == 0 {
		t.Errorf("checker %s did not catch the bug on any of %d seeds (exercised on %v)", checker, len(runs), exercised(runs))
		return
	}
	for _, r := range runs {
		if r.Seed == seeds[0] {
			for _, c := range r.Checks {
				if c.Name == checker {
					t.Logf("%s on seed %d:\n%s", checker, r.Seed, c.Detail)
				}
			}
		}
	}
	t.Logf("checker %s caught the bug on seeds %v of %d (exercised on %v)", checker, seeds, len(runs), exercised(runs))
}

// requireCaughtWhenExercised fails the test unless, on every seed on which
// the proxy mutated something, one of checkers failed.
func requireCaughtWhenExercised(t *testing.T, runs []mutatedRun, checkers ...string) {
	t.Helper()
	for _, r := range runs {
		if r.fired == 0 {
			continue
		}
		caught := false
		for _, c := range r.Checks {
			if !c.Passed && slices.Contains(checkers, c.Name) {
				caught = true
			}
		}
		if !caught {
			t.Errorf("seed %d: the proxy made %d mutations but none of %v failed (failed: %v)\n%s",
				r.Seed, r.fired, checkers, failedCheckers(r.SeedReport), tail(r.History, 40))
		}
	}
}

// The control: through the proxy without a mutation, the options and
// seeds of every variant pass every checker (so what fails there is the
// mutation's doing), and so does a seed that restarts instances behind
// the proxy (seed 10 of faults-150). "plain" has no hooks; the others
// pass through every hook at rest (broken.AtRest). The control waits
// for an echo as long as conformance run does (DefaultEchoTimeout), not
// the variants' second: a healthy server sends every echo, and on a busy
// machine one may come later than a second, which is no failure of the
// server (a variant caught only by a stall would also pass here).
func TestMutatingProxyControl(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mut   func() broken.Mutation
		opts  Options
		seeds []int64
	}{
		{"plain", func() broken.Mutation { return broken.Mutation{} }, Options{}, seedRange(1, 4)},
		{"faults", broken.AtRest, Options{Faults: true}, seedRange(1, 4)},
		{"long", broken.AtRest, Options{Steps: 200}, seedRange(1, 6)},
		{"faults-150", broken.AtRest, Options{Faults: true, Steps: 150}, []int64{10, 1, 2, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.EchoTimeout = DefaultEchoTimeout
			runs := runMutated(t, tc.mut, tc.opts, tc.seeds...)
			for _, r := range runs {
				for _, c := range r.Checks {
					if !c.Passed {
						t.Errorf("seed %d: checker %s failed through the plain proxy:\n%s\n%s", r.Seed, c.Name, c.Detail, tail(r.History, 40))
					}
				}
			}
		})
	}
}

// A command echoed twice under two seqs (every event whose seq is 3 mod 8,
// the rest of the stream renumbered).
//
// exactly-once catches it on every seed: the log the checker reads through
// the proxy holds the doubled commands twice, and from the first double on
// every acknowledged seq holds another command than the one acknowledged.
// projection catches it too: the checker reads the log up to kb.page's seq,
// which through the renumbering is an earlier command, so the fold misses
// the page's last commands. (The scheduler stops delivering to a window
// at the head kb.page reports, before the window's own echoes, which the
// renumbering put past it: quiesce does not settle, a protocol failure.)
//
// gapless does not: the renumbered log is contiguous and, read up to
// kb.page's seq, ends exactly there; the extra events lie past the head,
// where readLog stops reading.
func TestBrokenDoubleEcho(t *testing.T) {
	runs := runMutated(t, variant(t, "double-echo"), Options{}, seedRange(1, 3)...)
	requireExercised(t, runs)
	requireCaught(t, runs, CheckExactlyOnce)
	requireCaughtWhenExercised(t, runs, CheckExactlyOnce)
	requireCaught(t, runs, CheckProjection)
}

// No deduplication: a command posted again (after a lost response) is
// applied again. Only seeds whose faults include lost responses retry:
// seeds 1 and 2 do (lose=0.06).
//
// exactly-once catches it: the retry's answer is the seq of the second
// application, whose log entry has another id (or the retry is rejected by
// the reducer while the first application is in the log).
// linearizability too: the client's command and the second application
// (a foreign command in the log) claim the same seq, and nobody claims the
// first application's.
func TestBrokenSkipDedup(t *testing.T) {
	runs := runMutated(t, variant(t, "skip-dedup"), Options{Faults: true}, seedRange(1, 4)...)
	requireExercised(t, runs)
	requireCaught(t, runs, CheckExactlyOnce)
	requireCaught(t, runs, CheckLinear)
}

// A page's commands delivered out of order: the commands of the events
// with seqs 4 and 5 mod 10 swapped, each keeping its seq.
//
// projection catches it when the swapped commands do not commute (the fold
// of the log as delivered differs from kb.page); swaps that commute (edits
// of different nodes) it cannot see. exactly-once catches every swap of an
// acknowledged command (the log holds another id at its seq), and the
// log the checker reads always swaps seqs 4 and 5 of each page (the last
// setup command and the first client command).
func TestBrokenReorder(t *testing.T) {
	runs := runMutated(t, variant(t, "reorder"), Options{}, seedRange(1, 4)...)
	requireExercised(t, runs)
	requireCaught(t, runs, CheckProjection)
	requireCaughtWhenExercised(t, runs, CheckExactlyOnce, CheckProjection)
}

// Derived commands (rename rewrites of the links to a renamed page,
// merge-page's restore and set-aliases on the target, restore-page's
// deletes on it) never published: every event whose command no client
// posted through the proxy is dropped. The runs need renames of linked
// pages or merges, which about half the seeds of 200 steps draw.
//
// gapless catches it: the log read through the proxy has a hole. A hole at
// the end of the log (the dropped command is the page's last) makes
// reading the log time out instead, a protocol failure. projection alone
// would miss some: a merge undone by restore-page drops four commands whose
// effects cancel out.
func TestBrokenDropDerived(t *testing.T) {
	runs := runMutated(t, variant(t, "drop-derived"), Options{Steps: 200}, seedRange(1, 6)...)
	requireExercised(t, runs)
	requireCaught(t, runs, CheckGapless)
	requireCaughtWhenExercised(t, runs, CheckGapless, CheckProtocol)
}

// variant is the named broken-server variant's mutation constructor.
func variant(t *testing.T, name string) func() broken.Mutation {
	t.Helper()
	mk, ok := broken.Variant(name)
	if !ok {
		t.Fatalf("no broken-server variant %q", name)
	}
	return mk
}
