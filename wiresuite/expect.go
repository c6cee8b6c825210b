package wiresuite

import (
	"github.com/subspace/kbkit/speckit/report"
)

// judge applies the check's expectation e (nil: none) of x to r: a
// failure expected or known to be flaky keeps the run green, a pass of a
// check expected to fail fails it as a stale expectation. A skipped check
// is not judged (it showed neither).
func judge(x *report.Expectations, e *report.Expectation, r Result) Result {
	if e == nil || r.Status == Skip {
		r.Expectation = e
		return r
	}
	r.Expectation = e
	v, msg := x.JudgeUnit(e, r.Status == Fail)
	r.Verdict = v
	switch v {
	case report.VerdictUnexpectedPass:
		r.Message = msg
	case report.VerdictExpectedFail, report.VerdictKnownFlaky:
		r.Message = msg + ": " + r.Message
	case report.VerdictPass:
		r.Message = msg
	}
	return r
}

// ok says whether the result keeps the run green.
func (r Result) ok() bool {
	if r.Verdict != "" {
		return r.Verdict.OK()
	}
	return r.Status != Fail
}

// CheckIDs are the ids of checks, for an expectations file's entries to
// be checked against before a run.
func CheckIDs(checks []Check) []string {
	ids := make([]string, len(checks))
	for i, c := range checks {
		ids[i] = c.ID
	}
	return ids
}
