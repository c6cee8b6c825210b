package main

import (
	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/speckit/cli"
)

// newSpecCmd mounts `kbkit spec` and newAdapterCmd `kbkit adapter`
// (package speckit/cli); their exit statuses are cliutil.ExitError.
func newSpecCmd() *cobra.Command    { return cli.NewSpecCommand() }
func newAdapterCmd() *cobra.Command { return cli.NewAdapterCommand() }
