// Package cliutil holds what the subcommands of the kbkit command line
// share, wherever their package is: the exit statuses and the error that
// carries one out of a cobra command, the opening of a report file ("-" is
// stdout), and the wording of a run that could not start.
package cliutil

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/subspace/kbkit/target"
)

// Exit statuses shared by every subcommand.
const (
	ExitOK      = 0
	ExitFailed  = 1 // the thing under test failed a check
	ExitErrored = 2 // the run could not proceed, or bad flags
)

// ExitError carries an exit status out of a cobra command; the command
// line exits with Code and prints nothing more.
type ExitError struct{ Code int }

func (e ExitError) Error() string { return fmt.Sprintf("exit %d", e.Code) }

// CreateOutput opens a report file; "-" is stdout (left open).
func CreateOutput(path string, stdout io.Writer) (io.Writer, func() error, error) {
	if path == "-" {
		return stdout, func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	return f, f.Close, nil
}

// CannotRun words an error of a run that could not proceed without the
// package prefixes that would stutter after the command's own.
func CannotRun(err error) string {
	msg := err.Error()
	if p := target.ErrCannotRun.Error() + ": "; strings.HasPrefix(msg, p) {
		return "could not run: " + strings.TrimPrefix(msg, p)
	}
	return msg
}
