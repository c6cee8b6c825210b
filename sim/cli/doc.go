// Package cli is the simulator's command, `kbkit conformance run`: its
// flags, the target it runs against (--server's, else the reference
// server in process on a provided Postgres), the progress lines, the
// summary table, --json and --junit, and the shrink of the first failing
// seed. cmd/kbkit mounts NewRunCommand under `kbkit conformance`, passing
// in the deliberately broken servers of the hidden --broken-server flag
// (package sim/broken, which only cmd/ and tests import).
//
//	kbkit conformance run --seeds 100 --faults --html timelines
//	kbkit conformance run --server http://127.0.0.1:8080 --token kbk_... --junit run.xml
//	kbkit conformance run --seed 7 --choices seed-7.choices.json
package cli
