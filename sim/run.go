package sim

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// Run runs the simulator from a Go test: every seed is a subtest named
// seeds/seed=N, and a failing checker fails it with the seed, the
// checker's findings and the history around them (FailureHistory),
// after replaying it Options.Reruns times (Rerun) to say how often it
// fails. Use it to put kbkit's
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
				Rerun(t.Context(), target, o, &r, o.Reruns, nil)
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
					h, what := FailureHistory(r, 60)
					rec := ""
					if r.Runs > 0 {
						rec = "\n" + r.Recurrence()
					}
					t.Logf("faults: %s%s\n%s:\n%s\nreplay with: %s",
						r.Faults, rec, what, strings.Join(h, "\n"), r.Replay)
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

// windowRef finds the windows a history line or a finding names (w3, or
// w3 (client line) for a client's window).
var windowRef = regexp.MustCompile(`\bw(\d+)\b`)

// FailureHistory is the part of a failing seed's history a report shows,
// at most n events, and what it is. When the failing checkers' findings
// name one window, it is that window's own events (its intents, posts,
// answers, echoes and state replies, and the lines that name no window:
// restarts, findings) around the first finding that names it (most
// before it, a few after): in a page where other windows were busy, the
// failing window's last events may lie far from the page's last ones.
// Else it is the last n events.
func FailureHistory(r SeedReport, n int) (lines []string, what string) {
	named := map[string]bool{}
	for _, c := range r.Checks {
		if c.Passed {
			continue
		}
		for _, m := range windowRef.FindAllStringSubmatch(c.Detail, -1) {
			named[m[1]] = true
		}
	}
	if len(named) != 1 {
		h := r.History
		if len(h) > n {
			h = h[len(h)-n:]
		}
		return h, fmt.Sprintf("history (last %d events)", len(h))
	}
	var w string
	for k := range named {
		w = k
	}
	var own []string
	anchor := -1
	for _, line := range r.History {
		refs := windowRef.FindAllStringSubmatch(line, -1)
		mine := len(refs) == 0
		for _, m := range refs {
			mine = mine || m[1] == w
		}
		if !mine {
			continue
		}
		if anchor < 0 && len(refs) > 0 && strings.Contains(line, "FINDING") {
			anchor = len(own)
		}
		own = append(own, line)
	}
	if anchor < 0 {
		anchor = len(own)
	}
	after := min(n/4, len(own)-anchor)
	from := max(0, anchor+after-n)
	h := own[from : anchor+after]
	return h, fmt.Sprintf("history of w%s around its finding (%d events: its own and those that name no window)", w, len(h))
}
