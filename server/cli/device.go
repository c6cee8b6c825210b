package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/server/store"
)

// NewDeviceCommand returns `kbkit device` with pair and revoke.
func NewDeviceCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "device",
		Short: "Manage devices (bearer tokens)",
	}
	cmd.AddCommand(newDevicePairCmd(), newDeviceRevokeCmd())
	return cmd
}

func newDeviceRevokeCmd() *cobra.Command {
	var device, workspace, dsn string
	var all bool
	cmd := &cobra.Command{
		Use:   "revoke",
		Short: "Revoke a device (or every device of a workspace): its token stops working at once",
		Long: `Deletes the device --device (or, with --workspace NAME --all, every device of
the workspace) and notifies every server instance on the database: within
a second the token gets 401 UNAUTHORIZED over HTTP, and the device's open
WebSockets are closed with 1008 "device revoked" (spec/PROTOCOL.md
section 2). Prints one JSON line per revoked device:

  {"workspace_id":"...","device_id":"..."}

The database is --dsn, else KBKIT_PG_DSN.`,
		Example: `  kbkit device revoke --device 8d9e... --dsn "$DSN"
  kbkit device revoke --workspace acme --all --dsn "$DSN"`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			ctx := c.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			return revokeDevices(ctx, c.OutOrStdout(), device, workspace, all, dsn)
		},
	}
	cmd.Flags().StringVar(&device, "device", "", "the device id to revoke")
	cmd.Flags().StringVar(&workspace, "workspace", "", "with --all: the workspace whose devices to revoke")
	cmd.Flags().BoolVar(&all, "all", false, "with --workspace: revoke every device of the workspace")
	cmd.Flags().StringVar(&dsn, "dsn", "", "PostgreSQL DSN of the server's database (default $"+pgprovider.EnvDSN+")")
	return cmd
}

func newDevicePairCmd() *cobra.Command {
	var workspace, dsn string
	cmd := &cobra.Command{
		Use:   "pair",
		Short: "Pair a new device of a workspace and print its token",
		Long: `Creates a device of workspace --workspace (and the workspace, if new) in
the database and prints one JSON line on stdout:

  {"workspace":"acme","workspace_id":"...","device_id":"...","token":"kbk_..."}

The token is shown only this once (the database keeps its hash). Requests
carry it as "Authorization: Bearer TOKEN" (WebSocket: connectionParams
{"token": TOKEN} or the same header).

The database is --dsn, else KBKIT_PG_DSN; it is migrated if needed. For a
server started by "kbkit serve", use the "dsn" of its JSON line.`,
		Example: `  kbkit serve > server.json & srv=$!
  until [ -s server.json ]; do sleep 1; done
  kbkit device pair --workspace dev --dsn "$(jq -r .dsn server.json)"   # a second device of serve's workspace
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
			line, _ := json.Marshal(struct {
				Workspace string `json:"workspace"`
				store.PairedDevice
			}{workspace, dev})
			_, err = fmt.Fprintln(c.OutOrStdout(), string(line))
			return err
		},
	}
	cmd.Flags().StringVar(&workspace, "workspace", "", "workspace name (created if new)")
	cmd.Flags().StringVar(&dsn, "dsn", "", "PostgreSQL DSN of the server's database (default $"+pgprovider.EnvDSN+")")
	return cmd
}

// revokeDevices is `kbkit device revoke`: device, or with all every device
// of workspace, one JSON line each on stdout.
func revokeDevices(ctx context.Context, stdout io.Writer, device, workspace string, all bool, dsn string) error {
	switch {
	case device != "" && (workspace != "" || all):
		return errors.New("device revoke: give --device ID, or --workspace NAME --all, not both")
	case device == "" && !(workspace != "" && all):
		return errors.New("device revoke: --device ID, or --workspace NAME --all, is required")
	}
	if dsn == "" {
		dsn = strings.TrimSpace(os.Getenv(pgprovider.EnvDSN))
	}
	if dsn == "" {
		return fmt.Errorf("device revoke: no database: pass --dsn DSN or set %s", pgprovider.EnvDSN)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return fmt.Errorf("device revoke: %w", err)
	}
	defer st.Close()
	var devs []store.Device
	if device != "" {
		d, err := st.RevokeDevice(ctx, device)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("device revoke: no device %s", device)
		}
		if err != nil {
			return fmt.Errorf("device revoke: %w", err)
		}
		devs = []store.Device{d}
	} else {
		if devs, err = st.RevokeWorkspace(ctx, workspace); err != nil {
			return fmt.Errorf("device revoke: %w", err)
		}
		if len(devs) == 0 {
			return fmt.Errorf("device revoke: workspace %q has no devices", workspace)
		}
	}
	for _, d := range devs {
		line, _ := json.Marshal(d)
		if _, err := fmt.Fprintln(stdout, string(line)); err != nil {
			return err
		}
	}
	return nil
}
