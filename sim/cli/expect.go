package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/subspace/kbkit/sim"
	"github.com/subspace/kbkit/speckit/report"
)

// loadRunExpect reads --expect ("": none) and keeps the entries that apply
// to this run: those without client or server, those whose client is one
// of the run's --client command lines and those whose server is its
// --broken-server variant or --server URL. Every entry of the file must
// name a checker (exact or glob) and have status fail or known_flaky; a
// file that does not is refused before the run.
func loadRunExpect(f *conformanceFlags) (*report.Expectations, error) {
	if f.expect == "" {
		return nil, nil
	}
	x, err := report.LoadExpectations(f.expect)
	if err != nil {
		return nil, err
	}
	if err := x.Refuse(func(e report.Expectation) string {
		if e.Status == report.ExpectSkip {
			return "status skip: a checker cannot be left out of a run (use fail or known_flaky)"
		}
		return ""
	}); err != nil {
		return nil, err
	}
	if err := x.RequireKnown(sim.Checkers, "simulator checker", "the checkers: "+strings.Join(sim.Checkers, ", ")); err != nil {
		return nil, err
	}
	return x.Filter(func(e report.Expectation) bool {
		return (e.Client == "" || slices.Contains(f.clients, e.Client)) &&
			(e.Server == "" || e.Server == f.broken || e.Server == f.server)
	}), nil
}

// allows returns the entry that lets the checker fail (every entry of x
// has status fail or known_flaky), or nil.
func allows(x *report.Expectations, checker string) *report.Expectation {
	return x.Match(checker)
}

// unexpectedFailure reports whether the seed failed a checker no entry
// of x lets fail.
func unexpectedFailure(x *report.Expectations, r sim.SeedReport) bool {
	for _, c := range r.Checks {
		if !c.Passed && allows(x, c.Name) == nil {
			return true
		}
	}
	return false
}

// checkerRun is what one checker did over a run's seeds.
type checkerRun struct {
	failed []int64 // the seeds that failed it
	passed int     // seeds that passed it with something to check
}

// judgeExpectations says, on w, what became of each checker an entry of
// x names: failed as expected, known flaky (failed or passed), stale (an
// expected failure that no seed showed, while some seed checked it), or
// not exercised (no seed had anything for it to check). It reports
// whether a stale entry fails the run.
func judgeExpectations(w io.Writer, x *report.Expectations, reports []sim.SeedReport) (stale bool) {
	if x == nil {
		return false
	}
	runs := map[string]*checkerRun{}
	for _, r := range reports {
		for _, c := range r.Checks {
			cr := runs[c.Name]
			if cr == nil {
				cr = &checkerRun{}
				runs[c.Name] = cr
			}
			switch {
			case !c.Passed:
				cr.failed = append(cr.failed, r.Seed)
			case !c.Skipped:
				cr.passed++
			}
		}
	}
	for _, name := range sim.Checkers {
		e := allows(x, name)
		if e == nil {
			continue
		}
		cr := runs[name]
		where := x.Where(*e)
		switch {
		case cr != nil && len(cr.failed) > 0:
			_, msg := x.JudgeUnit(e, true)
			fmt.Fprintf(w, "checker %s: %s (%s); failing seeds: %s\n", name, msg, where, seedList(cr.failed))
		case cr == nil || cr.passed == 0:
			fmt.Fprintf(w, "checker %s: expectation %q (%s, %s) not exercised: no seed gave the checker anything to check\n", name, e.ID, e.Status, where)
		default:
			v, msg := x.JudgeUnit(e, false)
			fmt.Fprintf(w, "checker %s: %s\n", name, msg)
			if v == report.VerdictUnexpectedPass {
				stale = true
			}
		}
	}
	return stale
}

func seedList(seeds []int64) string {
	out := make([]string, len(seeds))
	for i, s := range seeds {
		out[i] = fmt.Sprint(s)
	}
	return strings.Join(out, " ")
}

// unexpected are the reports to shrink: the seeds that failed a checker
// no entry of x lets fail, and those that could not run (skipped by the
// shrink); an expected failure is not shrunk again on every run.
func unexpected(x *report.Expectations, reports []sim.SeedReport) []sim.SeedReport {
	if x == nil {
		return reports
	}
	var out []sim.SeedReport
	for _, r := range reports {
		if r.Err != "" || unexpectedFailure(x, r) {
			out = append(out, r)
		}
	}
	return out
}
