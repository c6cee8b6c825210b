// Package cli is `kbkit bench`: `kbkit bench floor` measures the machine's
// floors (package bench/floor) under kbkit serve's and kbkit loadgen's
// figures. cmd/kbkit mounts NewCommand.
//
// A floor's other end runs as a process of its own: this executable
// again, as `bench floor --child ROLE` (os.Executable), so the binary
// must be kbkit (or a test binary standing in for it).
//
//	kbkit bench floor --floors loopback --sockets 200,2000 --json
package cli
