// Package selftest measures the kit's power: it runs every negative
// control kbkit ships (the broken servers of sim/broken under the
// simulator and the protocol suite, the bugs of the example client under
// the client suite, the broken adapter under spec run and spec fuzz), the
// zoo of published anomalies of real sync engines translated into this
// protocol, and a sample of single-edit mutants of kbcore judged by spec
// run, spec fuzz and go test; it reports per control the check that
// caught it and what it took, and the mutation score per area.
//
// A control that is not caught fails the run; one that cannot run is an
// error, never a pass. Each verdict is judged against a positive control
// (the same proxy at rest, the client unbroken, the reference adapter
// unmutated) that must pass.
package selftest
