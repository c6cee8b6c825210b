//go:build unix

package pgprovider

import (
	"io/fs"
	"os"
	"os/exec"
	"syscall"
)

// credential is the unprivileged user postgres runs as when kbkit runs
// as root.
type credential struct{ uid, gid int }

// ownGroup puts cmd in a process group of its own (a ^C to the caller's
// group does not reach it), run as cred when cred is set.
func ownGroup(cmd *exec.Cmd, cred *credential) {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if cred != nil {
		attr.Credential = &syscall.Credential{Uid: uint32(cred.uid), Gid: uint32(cred.gid), Groups: []uint32{}}
	}
	cmd.SysProcAttr = attr
}

// fileOwner is fi's owner and group.
func fileOwner(fi fs.FileInfo) (uid, gid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}

// interrupt asks postgres for a fast shutdown (SIGINT).
func interrupt(p *os.Process) { _ = p.Signal(syscall.SIGINT) }

// pause stops p (SIGSTOP) until resume.
func pause(p *os.Process) error { return p.Signal(syscall.SIGSTOP) }

func resume(p *os.Process) error { return p.Signal(syscall.SIGCONT) }
