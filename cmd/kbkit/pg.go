package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/server/pgprovider"
)

func newPgCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pg",
		Short: "PostgreSQL for local development",
	}
	cmd.AddCommand(newPgUpCmd())
	return cmd
}

func newPgUpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "up",
		Short: "Start a throwaway PostgreSQL and print its DSN until Ctrl-C",
		Long: `Starts a PostgreSQL server for local development and prints its admin DSN
(database "postgres") on stdout, then waits for SIGINT or SIGTERM and stops
it; a cluster or container it started is deleted with its data.

The server comes from the first provider that works (server/pgprovider):
KBKIT_PG_DSN (an existing server: nothing is started), else a Docker
container (KBKIT_PG_IMAGE, default postgres:16-alpine), else this
machine's PostgreSQL binaries (initdb and postgres on PATH or in
/usr/lib/postgresql/*/bin) in a temporary directory. KBKIT_PG=dsn|docker|local
forces one. Logs go to stderr.`,
		Example: `  kbkit pg up
  DSN=$(kbkit pg up | head -1)   # in a script, keep the process running`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			ctx := c.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			return runPgUp(ctx, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
}

func runPgUp(ctx context.Context, stdout, stderr io.Writer) error {
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := pgprovider.OptionsFromEnv()
	opts.Logf = func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) }
	srv, err := pgprovider.Start(ctx, opts)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(stdout, srv.DSN()); err != nil {
		log.Warn("writing the DSN to stdout", "err", err)
	}
	log.Info("PostgreSQL is up; Ctrl-C stops it", "provider", string(srv.Kind()))
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.Stop(sctx); err != nil {
		return fmt.Errorf("stopping PostgreSQL: %w", err)
	}
	log.Info("stopped")
	return nil
}
