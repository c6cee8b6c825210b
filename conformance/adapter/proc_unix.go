//go:build unix

package adapter

import (
	"os/exec"
	"syscall"
)

// setGroup puts the adapter in its own process group, so that killing it
// also kills what it started (a shell wrapper's children, say).
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills the adapter's process group.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
}
