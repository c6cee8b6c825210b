// Package coverage ties the normative sentences of kbkit's spec to the
// checks that test them. Each requirement is tagged in the prose
// ([req: id], spec/README.md "Requirement ids"); the checks declare the
// ids they test (wiresuite.Covers, sim.Covers, and the case rules of
// cases.go, derived from a case's shape where they can be); a requirement
// nothing tests is waived in spec/waivers.yaml with the reason.
//
//	all, _ := cases.Open()
//	rep, err := coverage.Build(spec.FS, coverage.Kit(all))
//	for _, e := range rep.Uncovered(coverage.MUST) { ... }
package coverage
