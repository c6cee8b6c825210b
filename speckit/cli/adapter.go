package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/internal/cliutil"
	"github.com/subspace/kbkit/speckit/adapter"
	"github.com/subspace/kbkit/speckit/cases"
)

// NewAdapterCommand returns the `adapter` command: the reference served over
// the adapter protocol.
func NewAdapterCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "adapter",
		Short: "Serve the reference implementation over the adapter protocol on stdin/stdout",
		Long: `Reads adapter requests (spec/ADAPTER.md: one JSON object per line) from
stdin and writes the reference implementation's replies to stdout, until
stdin ends. It is the adapter protocol's reference end:

  kbkit spec run --impl "kbkit adapter"

checks the reference through the real protocol, and an adapter author can
pipe requests into it to see the expected replies.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := adapter.Serve(commandContext(c), c.InOrStdin(), c.OutOrStdout(), cases.Reference{}); err != nil {
				fmt.Fprintln(c.ErrOrStderr(), "kbkit adapter:", err)
				return cliutil.ExitError{Code: cliutil.ExitErrored}
			}
			return nil
		},
	}
}
