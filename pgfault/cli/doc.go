// Package cli is the command line of the Postgres fault harnesses
// (package pgfault): `kbkit pg failover-test`, `kbkit pg partition-test`
// and `kbkit pg soak`. cmd/kbkit mounts NewFailoverTestCommand,
// NewPartitionTestCommand and NewSoakCommand under its `pg` command.
// Exit statuses are cliutil's: 0 passed, 1 a finding, 2 the run could not
// be made.
//
// The soak runs the server as a process of its own: this executable's
// `serve` (os.Executable), so the binary must be kbkit (or a test binary
// standing in for it).
//
//	kbkit pg failover-test --topology async-standby
//	kbkit pg partition-test --fault blackhole --hold 5s
//	kbkit pg soak --duration 30m --html out/soak.html
package cli
