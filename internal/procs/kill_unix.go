//go:build unix

package procs

import (
	"os/exec"
	"syscall"
	"time"
)

// KillTree ends pid and every process below it: pid is stopped first (it
// forks no more), then all get SIGKILL at once (a stopped process is
// killed all the same) and pid's process group too. It waits, at most 5
// s, until the descendants are gone (pid itself is the caller's child to
// reap).
func KillTree(pid int) {
	_ = syscall.Kill(pid, syscall.SIGSTOP)
	below := Descendants(pid)
	for _, k := range below {
		_ = syscall.Kill(k, syscall.SIGKILL)
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
	WaitGone(below, 5*time.Second)
}

// OwnGroup makes cmd, when started, the leader of a process group of its
// own: a ^C to the caller's group does not reach it, and KillGroup and
// TermGroup reach everything it starts (a shell wrapper's children).
func OwnGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// TermGroup asks pid's process group to end (SIGTERM).
func TermGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGTERM) }

// KillGroup kills pid's process group and pid itself (SIGKILL).
func KillGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
}
