package fuzz

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/subspace/kbkit/speckit/cases"
	"github.com/subspace/kbkit/speckit/report"
)

// Result is d as a report result (a failed or errored case, the shrunk
// case's YAML after its diff), for the JSON lines and JUnit writers that
// `kbkit spec run` uses.
func (d *Difference) Result() report.Result {
	o := d.Outcome
	o.Diff = strings.TrimRight(o.Diff, "\n") + "\ncase:\n" + CaseYAML(d.Case)
	r := report.Result{Outcome: o, Description: d.Case.Description, Duration: d.ShrinkTime}
	r.Verdict = report.VerdictFail
	if o.Status == cases.Error {
		r.Verdict = report.VerdictError
	}
	r.Message = fmt.Sprintf("differs from the reference (%s; %s; signature %s): input %d; shrunk from %d to %d choices, %d to %d bytes",
		d.Area, d.Kind, strings.Join(d.Signatures, " "), d.Input, d.Original.Choices, d.Shrunk.Choices, d.Original.Bytes, d.Shrunk.Bytes)
	return r
}

// JudgeExpectations judges each entry of x about fuzzed differences alone
// (IsFuzzEntry) whose suite was fuzzed: an entry with status fail that
// silenced no input is stale (VerdictUnexpectedPass, which fails the
// run); one that did is an expected failure; a known_flaky entry is
// known-flaky when it silenced an input, else a pass. Each result is
// named by the entry's id and says how many inputs it silenced.
func (r *Report) JudgeExpectations(x *report.Expectations) []report.Result {
	if x == nil {
		return nil
	}
	var out []report.Result
	for i := range x.Entries {
		e := &x.Entries[i]
		suite := SuiteOf(e.ID)
		if !IsFuzzEntry(*e) || e.Status == report.ExpectSkip || suite != "" && r.Suites[suite] == nil {
			continue
		}
		hits := r.Hits[e]
		v, msg := x.JudgeUnit(e, hits > 0)
		if hits > 0 {
			msg += fmt.Sprintf(" (%s, %d inputs)", x.Where(*e), hits)
		} else if v == report.VerdictPass {
			msg += fmt.Sprintf(" (%s; not seen in %d inputs)", x.Where(*e), r.Inputs)
		} else {
			msg = fmt.Sprintf("%s (not seen in %d inputs)", msg, r.Inputs)
		}
		status := cases.Fail
		if hits == 0 {
			status = cases.Pass
		}
		out = append(out, report.Result{Outcome: cases.Outcome{ID: e.ID, Suite: suite, Status: status},
			Expected: e, Verdict: v, Message: msg})
	}
	return out
}

// SuiteResults are one passing result per fuzzed suite, named
// fuzz/<suite>, whose message counts its inputs.
func (r *Report) SuiteResults() []report.Result {
	var out []report.Result
	for _, s := range r.suiteNames() {
		st := r.Suites[s]
		out = append(out, report.Result{
			Outcome: cases.Outcome{ID: "fuzz/" + s, Suite: s, Status: cases.Pass},
			Verdict: report.VerdictPass, Message: st.String(),
		})
	}
	return out
}

// WriteResults writes r to w, a report writer begun before the run: a
// passing result per suite (SuiteResults), the judged expectations
// (JudgeExpectations), then one per difference, and the summary of them
// all.
func (r *Report) WriteResults(w report.Writer, judged []report.Result) error {
	results := append(r.SuiteResults(), judged...)
	for _, d := range r.Differences {
		results = append(results, d.Result())
	}
	var sum report.Summary
	for i, res := range results {
		sum.Add(res)
		if err := w.Result(i+1, res); err != nil {
			return err
		}
	}
	return w.End(sum)
}

func (r *Report) suiteNames() []string {
	names := make([]string, 0, len(r.Suites))
	for s := range r.Suites {
		names = append(names, s)
	}
	// The runner's order (cases.Suites).
	sort.Slice(names, func(i, j int) bool {
		return slices.Index(cases.Suites, names[i]) < slices.Index(cases.Suites, names[j])
	})
	return names
}

// String counts a suite's inputs, e.g. "1000 inputs: 990 same, 10 invalid".
func (st SuiteStats) String() string {
	parts := []string{fmt.Sprintf("%d same", st.Same)}
	for _, p := range []struct {
		n    int
		what string
	}{{st.Differ, "differ"}, {st.Silenced, "differ as expected"}, {st.Skipped, "skipped"}, {st.Invalid, "invalid (dropped)"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	return fmt.Sprintf("%d inputs: %s", st.Inputs, strings.Join(parts, ", "))
}

// WriteDifference prints difference n: where it was found, how far it
// shrank, the runner's diff and the case, ready to paste.
func WriteDifference(w io.Writer, n int, d *Difference) {
	fmt.Fprintf(w, "\ndifference %d (%s; %s): input %d, %v into the run; shrunk from %d choices (%d bytes) to %d (%d bytes) in %v, %d trials\n",
		n, d.Area, d.Kind, d.Input, d.FoundAfter.Round(time.Millisecond), d.Original.Choices, d.Original.Bytes,
		d.Shrunk.Choices, d.Shrunk.Bytes, d.ShrinkTime.Round(time.Millisecond), d.ShrinkTests)
	if d.Repeats > 0 {
		fmt.Fprintf(w, "  (%d later inputs differed in this area and way too; only the first is shrunk)\n", d.Repeats)
	}
	fmt.Fprintf(w, "%s (- reference, + implementation):\n", d.Outcome.Status)
	for _, l := range strings.Split(strings.TrimRight(d.Outcome.Diff, "\n"), "\n") {
		fmt.Fprintf(w, "  %s\n", l)
	}
	fmt.Fprintf(w, "case (paste into the `cases:` list of %s):\n%s", caseFileFor(d.Case), CaseYAML(d.Case))
	fmt.Fprintf(w, "signature: %s\n", strings.Join(d.Signatures, " "))
	if len(d.New) > 0 {
		fmt.Fprintf(w, "to expect it while it is fixed, add to the expectations file (--expect, spec/EXPECTATIONS.md):\n")
		for _, s := range d.New {
			fmt.Fprintf(w, "  - {id: %q, status: fail, reason: \"...\"}\n", s)
		}
	}
}

// caseFileFor is the spec file a case of this area belongs in.
func caseFileFor(c cases.Case) string {
	switch c.Suite() {
	case cases.SuiteCommands:
		if a := commandArea(c.When["cmd"]); a != "unknown-type" {
			return "spec/commands/" + a + ".yaml"
		}
		return "a case file of spec/commands/"
	case cases.SuiteTokenizer:
		return "spec/tokenizer.yaml"
	case cases.SuiteWindow:
		return "spec/window.yaml"
	case cases.SuiteCanonical:
		return "spec/canonical.json"
	}
	return "spec/planner.yaml"
}

// WriteSummary prints the counts of a run.
func WriteSummary(w io.Writer, r *Report) {
	rate := 0.0
	if s := r.Elapsed.Seconds(); s > 0 {
		rate = float64(r.Inputs) / s
	}
	fmt.Fprintf(w, "\n%d inputs in %v (%.0f inputs/s), %d difference(s)\n", r.Inputs, r.Elapsed.Round(time.Millisecond), rate, len(r.Differences))
	for _, s := range r.suiteNames() {
		fmt.Fprintf(w, "  %-9s %s\n", s, r.Suites[s])
	}
}
