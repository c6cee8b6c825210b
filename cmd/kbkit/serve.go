package main

import (
	"github.com/spf13/cobra"

	servercli "github.com/subspace/kbkit/server/cli"
)

// newServeCmd mounts `kbkit serve` (package server/cli).
func newServeCmd() *cobra.Command { return servercli.NewServeCommand() }

// newDeviceCmd mounts `kbkit device pair|revoke` (package server/cli).
func newDeviceCmd() *cobra.Command { return servercli.NewDeviceCommand() }
