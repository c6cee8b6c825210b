package main

import (
	"github.com/spf13/cobra"

	pgfaultcli "github.com/subspace/kbkit/pgfault/cli"
	servercli "github.com/subspace/kbkit/server/cli"
)

// newPgCmd mounts `kbkit pg`: up (package server/cli) and the fault
// harnesses (package pgfault/cli).
func newPgCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pg",
		Short: "PostgreSQL for local development",
	}
	cmd.AddCommand(servercli.NewPgUpCommand(), pgfaultcli.NewFailoverTestCommand(),
		pgfaultcli.NewPartitionTestCommand(), pgfaultcli.NewSoakCommand())
	return cmd
}
