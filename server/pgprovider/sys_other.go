//go:build !unix

package pgprovider

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
)

// credential is unused where postgres cannot be started as another user.
type credential struct{ uid, gid int }

func ownGroup(*exec.Cmd, *credential) {}

func fileOwner(fs.FileInfo) (uid, gid int, ok bool) { return 0, 0, false }

// interrupt ends p: there is no SIGINT to send here.
func interrupt(p *os.Process) { _ = p.Kill() }

var errNoSignals = errors.New("pgprovider: stopping a process needs a Unix system")

func pause(*os.Process) error { return errNoSignals }

func resume(*os.Process) error { return errNoSignals }
