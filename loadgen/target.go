package loadgen

import (
	"context"
	"fmt"
	"time"

	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/target"
)

// EmbeddedOptions configure StartEmbedded.
type EmbeddedOptions struct {
	// DSN is the database to run on (migrated if needed). Empty: start
	// PostgreSQL with pgprovider (KBKIT_PG_DSN, Docker or local binaries)
	// and create a fresh database in it.
	DSN string
	// Instances of the reference server sharing the database (default 1).
	Instances int
	// Logf receives the provider's progress messages.
	Logf func(format string, args ...any)
}

// StartEmbedded starts kbkit's reference server in this process and
// returns it as a target; stop it with the returned function. The
// generator and the server then share the process (and its CPUs).
func StartEmbedded(ctx context.Context, o EmbeddedOptions) (*target.Embedded, func(), error) {
	if o.Instances <= 0 {
		o.Instances = 1
	}
	var cleanup []func()
	stop := func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
	}
	dsn := o.DSN
	if dsn == "" {
		popts := pgprovider.OptionsFromEnv()
		popts.Logf = o.Logf
		pg, err := pgprovider.Start(ctx, popts)
		if err != nil {
			return nil, nil, err
		}
		cleanup = append(cleanup, func() {
			sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_ = pg.Stop(sctx)
		})
		var drop func(context.Context) error
		dsn, drop, err = pg.NewDatabase(ctx, "")
		if err != nil {
			stop()
			return nil, nil, err
		}
		if pg.Kind() == pgprovider.KindDSN { // a borrowed server: leave no database behind
			cleanup = append(cleanup, func() {
				dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				_ = drop(dctx)
			})
		}
	}
	e, err := target.NewEmbedded(ctx, dsn, target.EmbeddedOptions{Instances: o.Instances})
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("loadgen: embedded server: %w", err)
	}
	cleanup = append(cleanup, e.Close)
	return e, stop, nil
}
