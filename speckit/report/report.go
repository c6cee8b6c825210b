package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/subspace/kbkit/speckit/cases"
)

// Verdict is what a case's outcome means for the run.
type Verdict string

// Verdicts. Pass, Skip and ExpectedFail keep the run green; Fail and
// UnexpectedPass make it fail (exit 1); Error makes it errored (exit 2).
const (
	VerdictPass           Verdict = "pass"
	VerdictSkip           Verdict = "skip"            // not supported by the implementation, or an expected skip
	VerdictExpectedFail   Verdict = "expected-fail"   // failed or errored, as the expectations say (TAP TODO)
	VerdictFail           Verdict = "fail"            // failed
	VerdictUnexpectedPass Verdict = "unexpected-pass" // passed although expected to fail: update the expectations
	VerdictError          Verdict = "error"           // could not be checked: crash, timeout, protocol error, bad case
	VerdictKnownFlaky     Verdict = "known-flaky"     // failed or errored, and known to now and then (TAP TODO)
)

// OK reports whether the verdict keeps the run green.
func (v Verdict) OK() bool {
	return v == VerdictPass || v == VerdictSkip || v == VerdictExpectedFail || v == VerdictKnownFlaky
}

// Result is one judged case.
type Result struct {
	cases.Outcome
	Description string
	// Expected is the matching expectation, or nil.
	Expected *Expectation
	Verdict  Verdict
	// Message says in one line why the case is not a plain pass.
	Message  string
	Duration time.Duration
	// NotRun is set when an expectation with status skip kept the case
	// from running.
	NotRun bool
}

// Judge turns an outcome and its expectation (nil if none) into a verdict.
func Judge(o cases.Outcome, e *Expectation) Result {
	r := Result{Outcome: o, Expected: e}
	expectFail := e != nil && e.Status == ExpectFail
	if e != nil && e.Status == ExpectFlaky {
		return judgeFlaky(r, e)
	}
	switch o.Status {
	case cases.Pass:
		r.Verdict = VerdictPass
		if expectFail {
			r.Verdict = VerdictUnexpectedPass
			r.Message = fmt.Sprintf("unexpected pass: expected to fail (%s); the entry is stale: remove it (%s:%d), or narrow it", e.Reason, e.File, e.Line)
		}
	case cases.Skip:
		r.Verdict, r.Message = VerdictSkip, firstLine(o.Diff)
		r.Diff = ""
	case cases.Fail:
		r.Verdict, r.Message = VerdictFail, "the result differs from the case (- expected, + got)"
		if expectFail {
			r.Verdict, r.Message = VerdictExpectedFail, "expected failure: "+e.Reason
		}
	default: // cases.Error
		r.Verdict, r.Message = VerdictError, oneLine(o.Diff)
		r.Diff = ""
		if expectFail {
			r.Verdict, r.Message = VerdictExpectedFail, "expected failure: "+e.Reason+" (errored: "+oneLine(o.Diff)+")"
		}
	}
	return r
}

// judgeFlaky is Judge under a known_flaky entry: a failure or an error is
// VerdictKnownFlaky, a pass a pass; the message says which.
func judgeFlaky(r Result, e *Expectation) Result {
	switch r.Status {
	case cases.Pass:
		r.Verdict, r.Message = VerdictPass, "known flaky, passed: "+e.Reason
	case cases.Skip:
		r.Verdict, r.Message = VerdictSkip, firstLine(r.Diff)
		r.Diff = ""
	case cases.Fail:
		r.Verdict, r.Message = VerdictKnownFlaky, "known flaky, failed: "+e.Reason
	default:
		r.Verdict, r.Message = VerdictKnownFlaky, "known flaky, errored: "+e.Reason+" ("+oneLine(r.Diff)+")"
		r.Diff = ""
	}
	return r
}

// NotRun is the result of a case an expectation with status skip keeps
// from running.
func NotRun(c cases.Case, e *Expectation) Result {
	return Result{
		Outcome:     cases.Outcome{ID: c.ID, Suite: c.Suite(), File: c.File, Line: c.Line, Status: cases.Skip},
		Description: c.Description,
		Expected:    e,
		Verdict:     VerdictSkip,
		Message:     "expected skip: " + e.Reason,
		NotRun:      true,
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Summary counts verdicts.
type Summary struct {
	Total  int
	Counts map[Verdict]int
	// Failed lists the ids of the cases whose verdict is not OK, in order.
	Failed []string
}

// Add counts one result.
func (s *Summary) Add(r Result) {
	if s.Counts == nil {
		s.Counts = map[Verdict]int{}
	}
	s.Total++
	s.Counts[r.Verdict]++
	if !r.Verdict.OK() {
		s.Failed = append(s.Failed, r.ID)
	}
}

// Exit codes.
const (
	ExitOK      = 0
	ExitFailed  = 1
	ExitErrored = 2
)

// ExitCode is 2 if a case errored, else 1 if one failed or passed
// unexpectedly, else 0.
func (s Summary) ExitCode() int {
	switch {
	case s.Counts[VerdictError] > 0:
		return ExitErrored
	case s.Counts[VerdictFail] > 0 || s.Counts[VerdictUnexpectedPass] > 0:
		return ExitFailed
	}
	return ExitOK
}

// String is a one-line summary.
func (s Summary) String() string {
	var b strings.Builder
	b.WriteString(plural(s.Total, "case"))
	b.WriteString(": ")
	parts := []string{}
	for _, v := range []struct {
		v    Verdict
		name string
	}{
		{VerdictPass, "passed"}, {VerdictFail, "failed"}, {VerdictError, "errored"},
		{VerdictUnexpectedPass, "passed unexpectedly"}, {VerdictExpectedFail, "failed as expected"},
		{VerdictKnownFlaky, "failed, known flaky"}, {VerdictSkip, "skipped"},
	} {
		if n := s.Counts[v.v]; n > 0 || v.v == VerdictPass || v.v == VerdictFail {
			parts = append(parts, itoa(n)+" "+v.name)
		}
	}
	b.WriteString(strings.Join(parts, ", "))
	return b.String()
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return itoa(n) + " " + what + "s"
}

// Writer receives the results of a run, in order.
type Writer interface {
	// Begin is called once, before the first result, with the number of
	// results to come.
	Begin(total int) error
	// Result is called once per case; n counts from 1.
	Result(n int, r Result) error
	// End is called once after the last result.
	End(s Summary) error
}

// Multi fans out to several writers; the first error wins.
func Multi(ws ...Writer) Writer { return multi(ws) }

type multi []Writer

func (m multi) Begin(total int) error {
	var first error
	for _, w := range m {
		if err := w.Begin(total); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (m multi) Result(n int, r Result) error {
	var first error
	for _, w := range m {
		if err := w.Result(n, r); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (m multi) End(s Summary) error {
	var first error
	for _, w := range m {
		if err := w.End(s); err != nil && first == nil {
			first = err
		}
	}
	return first
}
