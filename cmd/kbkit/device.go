package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/server/store"
)

func newDeviceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "device",
		Short: "Manage devices (bearer tokens)",
	}
	cmd.AddCommand(newDevicePairCmd())
	return cmd
}

func newDevicePairCmd() *cobra.Command {
	var workspace, dsn string
	cmd := &cobra.Command{
		Use:   "pair",
		Short: "Pair a new device of a workspace and print its token",
		Long: `Creates a device of workspace --workspace (and the workspace, if new) in
the database and prints one JSON line on stdout:

  {"workspace_id":"...","device_id":"...","token":"kbk_..."}

The token is shown only this once (the database keeps its hash). Requests
carry it as "Authorization: Bearer TOKEN" (WebSocket: connectionParams
{"token": TOKEN} or the same header).

The database is --dsn, else KBKIT_PG_DSN; it is migrated if needed. For a
server started by "kbkit serve", use the "dsn" of its JSON line.`,
		Example: `  kbkit serve > server.json & srv=$!
  until [ -s server.json ]; do sleep 1; done
  kbkit device pair --workspace acme --dsn "$(jq -r .dsn server.json)"
  kill $srv`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			ctx := c.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			if strings.TrimSpace(workspace) == "" {
				return errors.New("device pair: --workspace NAME is required")
			}
			if dsn == "" {
				dsn = strings.TrimSpace(os.Getenv(pgprovider.EnvDSN))
			}
			if dsn == "" {
				return fmt.Errorf("device pair: no database: pass --dsn DSN (the \"dsn\" printed by kbkit serve) or set %s", pgprovider.EnvDSN)
			}
			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			st, err := store.Open(ctx, dsn)
			if err != nil {
				return fmt.Errorf("device pair: %w", err)
			}
			defer st.Close()
			dev, err := st.PairDevice(ctx, workspace)
			if err != nil {
				return fmt.Errorf("device pair: %w", err)
			}
			line, _ := json.Marshal(dev)
			_, err = fmt.Fprintln(c.OutOrStdout(), string(line))
			return err
		},
	}
	cmd.Flags().StringVar(&workspace, "workspace", "", "workspace name (created if new)")
	cmd.Flags().StringVar(&dsn, "dsn", "", "PostgreSQL DSN of the server's database (default $"+pgprovider.EnvDSN+")")
	return cmd
}
