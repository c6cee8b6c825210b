package main

import (
	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/internal/cliutil"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "kbkit",
		Short:         "Reference implementation and conformance kit for the kbkit command model",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newSpecCmd())
	root.AddCommand(newAdapterCmd())
	root.AddCommand(newServeCmd())
	root.AddCommand(newPgCmd())
	root.AddCommand(newDeviceCmd())
	root.AddCommand(newConformanceCmd())
	root.AddCommand(newLoadgenCmd())
	root.AddCommand(newBenchCmd())
	root.AddCommand(newSelftestCmd())
	root.AddCommand(newVersionCmd())
	refuseEmptyNames(root)
	cliutil.Strict(root)
	return root
}
