package main

import (
	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/loadgen/cli"
)

// newLoadgenCmd mounts `kbkit loadgen` (package loadgen/cli); its exit
// statuses (99: a threshold broke) are cliutil.ExitError, as kbkit's.
func newLoadgenCmd() *cobra.Command { return cli.NewCommand() }
