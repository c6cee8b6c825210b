package main

import (
	"github.com/spf13/cobra"

	benchcli "github.com/subspace/kbkit/bench/cli"
)

// newBenchCmd mounts `kbkit bench` (package bench/cli).
func newBenchCmd() *cobra.Command { return benchcli.NewCommand() }
