// Package floor measures the machine's floors under the load generator's
// figures: what the cheapest possible program spends where kbkit serve
// and kbkit loadgen spend CPU or wait, so that a target out of reach on a
// machine is shown by measurement rather than by estimate.
//
//   - Loopback: the CPU of one write(2) of an M-byte message on one of N
//     TCP loopback sockets (127.0.0.1), paced round-robin at a total rate,
//     and of reading it on the other end. Sender and receiver are separate
//     processes, each reporting its own CPU (getrusage RUSAGE_SELF). On
//     loopback the sender's system time includes the TCP work of both ends
//     (the kernel delivers the segment in the writer's context), so the
//     receiver's figure is its wake-up and copy. A fan-out echo is one
//     WebSocket write per window: the sender's figure is the floor under
//     the server's CPU per echo, the receiver's under the generator's.
//   - Fsync: the rate of fdatasync after a small write (8 KiB, appended
//     to a preallocated file, as PostgreSQL writes its WAL) on the disk of
//     a directory: the ceiling on the commits per second of one WAL writer.
//   - HTTP: the CPU of one net/http POST (about 300 bytes, a 50-byte reply)
//     over a kept-alive loopback connection, client and server in separate
//     processes.
//   - RoundTrip: the latency of a small message and its answer on one
//     loopback TCP connection between two processes, one at a time, and
//     the CPU of each end: the cost of waking a process that waits on a
//     socket, twice. On a virtual machine whose idle processors halt, a
//     wake-up waits for the host, and every closed-loop caller (a
//     benchmark's client, an editor waiting for its answer) pays it.
//
// The loopback, HTTP and round-trip floors run their two ends as child processes made
// by a Spawner (kbkit re-executes itself with a hidden flag; the tests
// re-execute the test binary); a child runs Child with the role and the
// configuration it was given.
package floor
