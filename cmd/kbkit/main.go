// Command kbkit is the kbkit command line: it runs the spec cases against the
// reference reducer (and, as they land, serves, simulates and load-tests).
package main

import (
	"fmt"
	"os"
)

// Exit codes shared by the subcommands.
const (
	exitOK      = 0
	exitFailed  = 1
	exitErrored = 2
)

// exitError carries an exit code out of a cobra command.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	root := newRootCmd()
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		if e, ok := err.(exitError); ok {
			return e.code
		}
		fmt.Fprintln(os.Stderr, "kbkit:", err)
		return exitErrored
	}
	return exitOK
}
