// Package workload draws the commands of the load generator's virtual
// editors. It is pure: a generator is a function of a seeded random
// source, the page as the editor's window renders it, and the editor's
// cursor, so a run's command stream replays from its seed.
//
//	spec, _ := workload.Named("typing")
//	cmd := spec.Next(rng, workload.Context{Doc: win.Rendered(), ID: id}, &cursor)
//
// Workloads are named mixes of operations (see Names) that flags tune:
// the weights (SetMix), pages, windows per page, nodes per page, burst
// length.
package workload
