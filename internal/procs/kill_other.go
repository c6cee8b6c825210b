//go:build !unix

package procs

import (
	"os"
	"os/exec"
)

// KillTree ends pid where there are no process groups or signals to stop
// a tree with: pid alone is killed (the harnesses that start trees of
// processes run on Linux only).
func KillTree(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

// OwnGroup does nothing where there are no process groups.
func OwnGroup(*exec.Cmd) {}

// TermGroup ends pid: there is no SIGTERM to send here.
func TermGroup(pid int) { KillTree(pid) }

// KillGroup ends pid.
func KillGroup(pid int) { KillTree(pid) }
