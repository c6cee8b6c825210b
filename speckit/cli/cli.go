package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/speckit/cases"
)

// NewSpecCommand returns the `spec` command with its subcommands.
func NewSpecCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "spec",
		Short: "Run kbkit's language-neutral spec cases, or export them",
	}
	cmd.AddCommand(newRunCmd(), newExportCmd(), newShowCmd(), newFuzzCmd(), newMatrixCmd(), newCoverageCmd())
	return cmd
}

// knownSuites are the suites --suite accepts.
var knownSuites = cases.Suites

// commandContext is the command's context, or the background one when it
// runs without one.
func commandContext(c *cobra.Command) context.Context {
	if ctx := c.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
