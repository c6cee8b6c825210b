// Package bench holds what `kbkit bench` and `make bench-server` measure
// beside the load generator: package floor, the machine's own floors
// (a loopback write, an fsync, an HTTP request, a round trip between two
// processes) against which the server's and the generator's figures are
// read. Who uses it: anyone judging a load run's figures on a machine,
// and the reference server's maintainers.
package bench
