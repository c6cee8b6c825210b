package sim

import (
	"fmt"
	"strings"
	"testing"
)

// Run runs the simulator from a Go test: every seed is a subtest named
// seeds/seed=N, and a failing checker fails it with the seed, the
// checker's findings and the tail of the history. Use it to put kbkit's
// convergence suite in an implementation's own tests.
//
// Seeds run Options.Parallel at a time (as parallel subtests, so also at
// most -test.parallel at a time), each with its subtest's context
// (t.Context: canceled when the test ends or times out). Run returns when
// every seed has finished, the reports in seed order.
func Run(t *testing.T, target Target, opts Options) []SeedReport {
	t.Helper()
	opts.defaults()
	reports := make([]SeedReport, opts.Seeds)
	slots := make(chan struct{}, opts.Parallel)
	t.Run("seeds", func(t *testing.T) {
		for i := 0; i < opts.Seeds; i++ {
			seed := opts.Seed + int64(i)
			t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
				if opts.Parallel > 1 && opts.Seeds > 1 {
					t.Parallel()
				}
				slots <- struct{}{}
				defer func() { <-slots }()
				o := opts
				o.Logf = t.Logf
				r := RunSeed(t.Context(), target, o, seed)
				reports[i] = r
				if r.Err != "" {
					t.Fatalf("seed %d could not run: %s\n%s", seed, r.Err, tail(r.History, 40))
				}
				for _, c := range r.Checks {
					if !c.Passed {
						t.Errorf("seed %d: checker %s failed:\n%s", seed, c.Name, c.Detail)
					}
				}
				if r.Failed() {
					t.Logf("faults: %s\nhistory (last 60 events):\n%s\nreplay with: %s",
						r.Faults, tail(r.History, 60), r.Replay)
				}
			})
		}
	})
	return reports
}

func tail(lines []string, n int) string {
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
