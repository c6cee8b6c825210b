// Package report judges case outcomes against an expectations file (the
// ratchet) and writes the verdicts as TAP 14, JUnit XML or JSON lines.
//
//	x, _ := report.LoadExpectations("expectations.yaml")
//	w := report.Multi(report.NewTAP(os.Stdout), report.NewJSON(jsonFile))
//	w.Begin(len(all))
//	var sum report.Summary
//	for i, c := range all {
//		r := report.Judge(cases.Check(ctx, impl, c), x.Match(c.ID))
//		sum.Add(r)
//		w.Result(i+1, r)
//	}
//	w.End(sum)
//	os.Exit(sum.ExitCode())
package report
