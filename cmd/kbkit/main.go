// Command kbkit is the kbkit command line: it runs the spec cases against the
// reference reducer (and, as they land, serves, simulates and load-tests).
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/subspace/kbkit/internal/cliutil"
)

// Exit codes shared by the subcommands (package cliutil).
const (
	exitOK      = cliutil.ExitOK
	exitFailed  = cliutil.ExitFailed
	exitErrored = cliutil.ExitErrored
)

// exitError carries an exit code out of a cobra command.
type exitError = cliutil.ExitError

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	root := newRootCmd()
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		var e cliutil.ExitError
		if errors.As(err, &e) {
			return e.Code
		}
		fmt.Fprintln(os.Stderr, "kbkit:", err)
		return exitErrored
	}
	return exitOK
}
