// Command kbkit is the kbkit command line: flags and wiring only. A kit's
// subcommands mount the cli package of the kit they run (speckit/cli,
// server/cli, pgfault/cli, sim/cli, wiresuite/cli, loadgen/cli, bench/cli,
// selftest/cli), where its orchestration and tests live.
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
