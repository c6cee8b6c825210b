package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/loadgen/cli"
)

// newLoadgenCmd mounts `kbkit loadgen` (package loadgen/cli), turning its
// exit statuses (99: a threshold broke) into kbkit's.
func newLoadgenCmd() *cobra.Command {
	cmd := cli.NewCommand()
	for _, sub := range cmd.Commands() {
		run := sub.RunE
		if run == nil {
			continue
		}
		sub.RunE = func(c *cobra.Command, args []string) error {
			err := run(c, args)
			var e cli.ExitError
			if errors.As(err, &e) {
				return exitError{e.Code}
			}
			return err
		}
	}
	return cmd
}
