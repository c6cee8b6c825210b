package cli

import (
	"fmt"
	"strings"

	"github.com/subspace/kbkit/speckit/cases"
	"github.com/subspace/kbkit/speckit/fuzz"
	"github.com/subspace/kbkit/speckit/report"
)

// loadSpecExpect reads the expectations file of `spec run` and `spec
// fuzz`, which may share one: every entry must name a case of the
// built-in spec or of extra (the run's own case files), or something spec
// fuzz can report (a difference signature, a glob over fuzzed case ids);
// client and server belong to conformance run, and status skip to inputs
// (a case id or glob), not to a signature. A file that breaks a rule is
// refused before anything runs.
func loadSpecExpect(name string, extra []cases.Case) (*report.Expectations, error) {
	x, err := report.LoadExpectations(name)
	if err != nil {
		return nil, err
	}
	if err := x.Refuse(func(e report.Expectation) string {
		switch {
		case e.Client != "" || e.Server != "":
			return "client and server narrow entries of kbkit conformance run only"
		case e.Status == report.ExpectSkip && strings.Contains(e.ID, "/fuzz:"):
			return "status skip applies to inputs, not to a difference's signature (use fail or known_flaky, or a glob over ids such as \"move-node/*\")"
		}
		return ""
	}); err != nil {
		return nil, err
	}
	builtin, err := cases.Open()
	if err != nil {
		return nil, fmt.Errorf("the built-in spec: %v", err)
	}
	ids := fuzz.SignatureSpace()
	for _, c := range append(builtin, extra...) {
		ids = append(ids, c.ID)
	}
	return x, x.RequireKnown(ids, "spec case id or spec fuzz signature", "kbkit spec run's report names every case; spec fuzz prints each difference's signature")
}
