package report

import (
	"fmt"
	"path"
	"strings"
)

// The suites other than `kbkit spec run` (protocol checks, simulator
// checkers, fuzz signatures) read the same expectations file; the helpers
// below are what they share: refusing entries that name nothing the suite
// knows before anything runs, judging a unit that failed or passed, and
// wording a stale entry.

// Matches reports whether the entry's id, an exact id or a glob, matches id.
func (e Expectation) Matches(id string) bool {
	if e.ID == id {
		return true
	}
	ok, _ := path.Match(e.ID, id)
	return ok
}

// Where is the entry's place in its file, FILE:LINE.
func (x *Expectations) Where(e Expectation) string {
	return fmt.Sprintf("%s:%d", x.Path, e.Line)
}

// Unknown returns the entries that match none of ids: an exact id that is
// not one, a glob that matches nothing.
func (x *Expectations) Unknown(ids []string) []Expectation {
	if x == nil {
		return nil
	}
	var out []Expectation
	for _, e := range x.Entries {
		found := false
		for _, id := range ids {
			if e.Matches(id) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, e)
		}
	}
	return out
}

// RequireKnown is an error naming every entry that matches none of ids,
// each at its line ("what" names the kind of id: "protocol check"), and
// how to list the ids; nil when every entry names something.
func (x *Expectations) RequireKnown(ids []string, what, hint string) error {
	bad := x.Unknown(ids)
	if len(bad) == 0 {
		return nil
	}
	var b strings.Builder
	for _, e := range bad {
		kind := "is no " + what
		if isGlob(e.ID) {
			kind = "matches no " + what
		}
		fmt.Fprintf(&b, "\n  %s: %q %s", x.Where(e), e.ID, kind)
	}
	return fmt.Errorf("%w: %s:%s\n  (%s)", ErrExpectations, x.Path, b.String(), hint)
}

// Refuse is an error naming every entry for which why returns a reason,
// at its line; nil when there is none.
func (x *Expectations) Refuse(why func(e Expectation) string) error {
	if x == nil {
		return nil
	}
	var b strings.Builder
	for _, e := range x.Entries {
		if r := why(e); r != "" {
			fmt.Fprintf(&b, "\n  %s: %q: %s", x.Where(e), e.ID, r)
		}
	}
	if b.Len() == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s:%s", ErrExpectations, x.Path, b.String())
}

// Filter is x with only the entries keep accepts, in order (their lines
// kept); nil stays nil.
func (x *Expectations) Filter(keep func(e Expectation) bool) *Expectations {
	if x == nil {
		return nil
	}
	out := &Expectations{Path: x.Path}
	for _, e := range x.Entries {
		if keep(e) {
			e.index = len(out.Entries)
			out.Entries = append(out.Entries, e)
		}
	}
	out.used = make([]bool, len(out.Entries))
	return out
}

// JudgeUnit is the verdict on one unit of a suite (a protocol check, a
// simulator checker) that failed or passed, under its expectation (nil:
// none), and the message that says so ("" for a plain pass or failure).
// A unit expected to fail that passed is VerdictUnexpectedPass: the entry
// is stale, and x.Stale words it. A skip entry is not judged here (the
// unit is not run).
func (x *Expectations) JudgeUnit(e *Expectation, failed bool) (Verdict, string) {
	switch {
	case e == nil && failed:
		return VerdictFail, ""
	case e == nil:
		return VerdictPass, ""
	case e.Status == ExpectFlaky && failed:
		return VerdictKnownFlaky, "known flaky, failed: " + e.Reason
	case e.Status == ExpectFlaky:
		return VerdictPass, "known flaky, passed: " + e.Reason
	case failed:
		return VerdictExpectedFail, "expected failure: " + e.Reason
	}
	return VerdictUnexpectedPass, x.Stale(*e)
}

// Stale words an entry expected to fail whose unit passed: which entry,
// and what to do.
func (x *Expectations) Stale(e Expectation) string {
	return fmt.Sprintf("stale expectation: %q is expected to fail (%s) but passed; remove its entry (%s), or make it known_flaky if it fails only now and then",
		e.ID, e.Reason, x.Where(e))
}
