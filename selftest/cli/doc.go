// Package cli is `kbkit selftest`: the kit's negative controls, its zoo
// of real anomalies and a sample of kbcore mutants, with the check that
// caught each. cmd/kbkit mounts NewCommand with the broken servers of
// sim/broken (which only cmd/ may import).
//
//	kbkit selftest --quick
//	kbkit selftest --json power.json --html power.html --markdown docs/power.md
//	kbkit selftest --parts servers --only '^stale-page$'
package cli
