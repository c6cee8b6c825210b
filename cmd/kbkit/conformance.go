package main

import (
	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/sim/broken"
	simcli "github.com/subspace/kbkit/sim/cli"
	wirecli "github.com/subspace/kbkit/wiresuite/cli"
)

// newConformanceCmd mounts `kbkit conformance`: run (package sim/cli,
// given the broken servers of its hidden --broken-server flag, which only
// cmd/ may import) and protocol (package wiresuite/cli).
func newConformanceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "conformance",
		Short: "Multi-client convergence suite and protocol checks against a server",
	}
	cmd.AddCommand(simcli.NewRunCommand(simcli.BrokenServers{Variants: broken.Variants(), New: broken.New}))
	cmd.AddCommand(wirecli.NewCommand())
	return cmd
}
