package target

import (
	"context"

	"github.com/subspace/kbkit/server/pgprovider"
)

// ProvideOptions configure Provide.
type ProvideOptions struct {
	// Postgres says where PostgreSQL comes from (e.g.
	// pgprovider.OptionsFromEnv(): $KBKIT_PG_DSN, Docker or local
	// binaries, and their topology).
	Postgres pgprovider.Options
	// Embedded configure the reference server; Provide sets its Postgres
	// (restarts are allowed only on a server Provide started).
	Embedded EmbeddedOptions
}

// Provide starts PostgreSQL as o.Postgres says, creates a fresh database
// in it and starts the reference server on that database. When the
// provider started the Postgres server (not a borrowed $KBKIT_PG_DSN),
// the target may restart it (a fault). stop closes the server, drops the
// database (a borrowed server is left as it was) and stops PostgreSQL;
// it outlives ctx's cancellation. On error nothing is left running.
func Provide(ctx context.Context, o ProvideOptions) (e *Embedded, stop func(), err error) {
	pg, err := pgprovider.Start(ctx, o.Postgres)
	if err != nil {
		return nil, nil, err
	}
	cleanup := context.WithoutCancel(ctx)
	stopPG := func() { _ = pg.Stop(cleanup) }
	dsn, drop, err := pg.NewDatabase(ctx, "")
	if err != nil {
		stopPG()
		return nil, nil, err
	}
	dropDB := func() { _ = drop(cleanup) }
	opts := o.Embedded
	opts.Postgres = nil
	if pg.Kind() != pgprovider.KindDSN { // a server we did not start is not ours to restart
		opts.Postgres = pg
	}
	e, err = NewEmbedded(ctx, dsn, opts)
	if err != nil {
		dropDB()
		stopPG()
		return nil, nil, err
	}
	return e, func() {
		e.Close()
		dropDB()
		stopPG()
	}, nil
}
