package cliutil

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

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

// Code is the exit status err carries out of a command: ExitOK for nil,
// its Code for an ExitError (wrapped or not), else ExitErrored.
func Code(err error) int {
	var e ExitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &e):
		return e.Code
	}
	return ExitErrored
}

// Mount is a kbkit root command with cmds under the parent commands named
// by parents (none: directly under the root), as cmd/kbkit mounts a kit's
// commands (Strict): what a kit's tests run in process.
func Mount(parents []string, cmds ...*cobra.Command) *cobra.Command {
	root := &cobra.Command{Use: "kbkit", SilenceUsage: true, SilenceErrors: true}
	at := root
	for _, p := range parents {
		c := &cobra.Command{Use: p}
		at.AddCommand(c)
		at = c
	}
	at.AddCommand(cmds...)
	Strict(root)
	return root
}

// Execute runs root with args in process until it ends or ctx does
// (cancelling ctx is an interrupt), and returns its exit status, its
// stdout and its stderr; an error that carries no exit status is written
// on stderr.
func Execute(ctx context.Context, root *cobra.Command, stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	code = Code(err)
	var e ExitError
	if err != nil && !errors.As(err, &e) {
		errb.WriteString(err.Error())
	}
	return code, out.String(), errb.String()
}
