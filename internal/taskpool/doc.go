// Package taskpool runs short tasks on goroutines it keeps parked between
// them.
//
// The server's sockets run a worker (their request queue) and a writer
// (their outbound queue) only while they have work, so that an idle
// socket holds no goroutine for them, and the store runs each group
// transaction on a goroutine of its own. Starting a fresh goroutine for
// every burst costs its creation and, as the call grows the stack from
// its minimum, a stack copy or two each time, a cost paid per command on
// a busy socket (loadgen/results/2026-12-05-parked-goroutines-for-the-sockets-bursts.json
// has the measurements). A parked goroutine
// keeps the stack it grew (until a garbage collection finds it mostly
// unused), and handing it a task is one channel send.
package taskpool
