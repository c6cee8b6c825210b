package conformance

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The simulator must catch bugs: each test runs it against the reference
// server behind a mutating proxy (mutate.go) that breaks one guarantee of
// the protocol, and asserts that the checker guarding that guarantee
// fails. The control runs the same proxy without a mutation.

// runMutated runs opts against an embedded server behind a proxy with mut
// and logs each seed's failing checkers.
func runMutated(t *testing.T, mut mutation, opts Options) []SeedReport {
	t.Helper()
	e := embedded(t, EmbeddedOptions{})
	p := newMutatingProxy(e, mut)
	t.Cleanup(p.Close) // before e.Close: cleanups run last-in first-out
	if opts.EchoTimeout == 0 {
		// Broken servers make windows wait for echoes that never come.
		opts.EchoTimeout = time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	reports, err := RunSeeds(ctx, p, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		if r.Err != "" {
			t.Fatalf("seed %d could not run: %s\n%s", r.Seed, r.Err, tail(r.History, 30))
		}
		t.Logf("seed %d: failed %v (%s; %+v)", r.Seed, failedCheckers(r), r.Faults, r.Stats)
	}
	t.Logf("%d seeds in %s", len(reports), time.Since(start).Round(time.Millisecond))
	return reports
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

// requireCaught fails the test unless checker failed on at least one seed;
// it logs the checker's findings on the first such seed.
func requireCaught(t *testing.T, reports []SeedReport, checker string) {
	t.Helper()
	var seeds []int64
	for _, r := range reports {
		for _, c := range r.Checks {
			if c.Name == checker && !c.Passed {
				if len(seeds) == 0 {
					t.Logf("%s on seed %d:\n%s", checker, r.Seed, c.Detail)
				}
				seeds = append(seeds, r.Seed)
			}
		}
	}
	if len(seeds) == 0 {
		t.Errorf("checker %s did not catch the bug on any of %d seeds", checker, len(reports))
		return
	}
	t.Logf("checker %s caught the bug on %d of %d seeds %v", checker, len(seeds), len(reports), seeds)
}

func TestMutatingProxyControl(t *testing.T) {
	reports := runMutated(t, mutation{}, Options{Seed: 1, Seeds: 4, Steps: 120, Faults: true})
	for _, r := range reports {
		for _, c := range r.Checks {
			if !c.Passed {
				t.Errorf("seed %d: checker %s failed through the plain proxy:\n%s", r.Seed, c.Name, c.Detail)
			}
		}
	}
}

func TestBrokenDoubleEcho(t *testing.T) {
	reports := runMutated(t, mutDoubleEcho(), Options{Seed: 1, Seeds: 4})
	requireCaught(t, reports, CheckExactlyOnce)
	_ = strings.Join
}

func TestBrokenSkipDedup(t *testing.T) {
	reports := runMutated(t, mutSkipDedup(), Options{Seed: 1, Seeds: 4, Faults: true})
	requireCaught(t, reports, CheckExactlyOnce)
}

func TestBrokenReorder(t *testing.T) {
	reports := runMutated(t, mutReorder(), Options{Seed: 1, Seeds: 4})
	requireCaught(t, reports, CheckProjection)
}

func TestBrokenDropDerived(t *testing.T) {
	reports := runMutated(t, mutDropDerived(), Options{Seed: 1, Seeds: 4, Steps: 200})
	requireCaught(t, reports, CheckGapless)
}
