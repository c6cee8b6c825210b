// Package procs finds and ends the processes a harness started, from
// /proc: a postmaster's backends are each their own session (setsid), so
// neither a process-group kill nor the death of their parent ends one that
// is stopped (SIGSTOP); they must be found and killed one by one.
//
//	procs.KillTree(postmasterPid)     // the postmaster and every backend
//	left, _ := procs.Under("/tmp/x")  // what still runs in or on /tmp/x
package procs
