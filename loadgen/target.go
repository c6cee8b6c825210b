package loadgen

import (
	"context"
	"fmt"

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
	eopts := target.EmbeddedOptions{Instances: o.Instances}
	if o.DSN != "" {
		e, err := target.NewEmbedded(ctx, o.DSN, eopts)
		if err != nil {
			return nil, nil, fmt.Errorf("loadgen: embedded server: %w", err)
		}
		return e, e.Close, nil
	}
	popts := pgprovider.OptionsFromEnv()
	popts.Logf = o.Logf
	return target.Provide(ctx, target.ProvideOptions{Postgres: popts, Embedded: eopts})
}
