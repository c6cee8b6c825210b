package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/server/pgprovider"
)

// NewPgUpCommand returns `kbkit pg up` (the `pg` command that holds it is
// cmd/kbkit's).
func NewPgUpCommand() *cobra.Command {
	var dsnFile string
	cmd := &cobra.Command{
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
forces one. Logs go to stderr.

In a script, start it in the background with --print-dsn FILE: the DSN is
written to FILE (atomically) once the server accepts connections, and the
file is removed when it stops. (Do not read its stdout with $(...): the
command substitution waits for a process that only ends with its database.)`,
		Example: `  kbkit pg up
  kbkit pg up --print-dsn pg.dsn & pg=$!
  until [ -s pg.dsn ]; do sleep 1; done
  kbkit device pair --workspace acme --dsn "$(cat pg.dsn)"
  kill $pg`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			ctx := c.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			return runPgUp(ctx, dsnFile, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&dsnFile, "print-dsn", "", "also write the DSN to this file once the server is up (removed on exit)")
	return cmd
}

func runPgUp(ctx context.Context, dsnFile string, stdout, stderr io.Writer) error {
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := pgprovider.OptionsFromEnv()
	opts.Logf = func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) }
	srv, err := pgprovider.Start(ctx, opts)
	if err != nil {
		return err
	}
	if dsnFile != "" {
		if err := writeFileAtomic(dsnFile, srv.DSN()+"\n"); err != nil {
			sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_ = srv.Stop(sctx)
			return fmt.Errorf("--print-dsn: %w", err)
		}
		defer os.Remove(dsnFile)
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

// writeFileAtomic writes data to path through a temporary file in the same
// directory, so a script polling for the file never reads half of it.
func writeFileAtomic(path, data string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if _, err := tmp.WriteString(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
