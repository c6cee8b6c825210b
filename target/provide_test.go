package target

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/subspace/kbkit/server/pgprovider"
)

// databases lists the databases of the server at the admin dsn.
func databases(t *testing.T, ctx context.Context, dsn string) []string {
	t.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT datname FROM pg_database ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// serves says whether the embedded server answers: its devices pass the
// preflight (kb.whoami).
func serves(t *testing.T, ctx context.Context, e *Embedded) {
	t.Helper()
	toks, err := e.Devices(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := Preflight(ctx, Remote(e.Endpoints()[0], toks)); err != nil {
		t.Fatalf("the provided server does not serve its devices: %v", err)
	}
}

// stopped says whether the embedded server's endpoint refuses requests.
func stopped(t *testing.T, url string) {
	t.Helper()
	c := &http.Client{Timeout: time.Minute} // a hang detector
	if resp, err := c.Get(url); err == nil {
		resp.Body.Close()
		t.Errorf("%s still answers after stop", url)
	}
}

// On a borrowed server (a DSN), Provide runs the reference server on a
// fresh database it drops at stop, leaves the Postgres server running
// and never offers to restart it (even when the options name a server:
// Provide decides).
func TestProvideBorrowedLeavesTheServerAsItWas(t *testing.T) {
	ctx := context.Background()
	popts := pgprovider.OptionsFromEnv()
	popts.Fast = true
	pg, err := pgprovider.Start(ctx, popts)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Stop(context.WithoutCancel(ctx))
	before := databases(t, ctx, pg.DSN())

	e, stop, err := Provide(ctx, ProvideOptions{Postgres: pgprovider.Options{Kind: pgprovider.KindDSN, DSN: pg.DSN()},
		Embedded: EmbeddedOptions{Instances: 1, Postgres: pg}})
	if err != nil {
		t.Fatal(err)
	}
	if e.CanRestartPostgres() {
		t.Error("a borrowed Postgres server is offered for restarts")
	}
	if n := len(e.Endpoints()); n != 1 {
		t.Errorf("%d instances, want 1", n)
	}
	serves(t, ctx, e)
	if during := databases(t, ctx, pg.DSN()); len(during) != len(before)+1 {
		t.Errorf("databases while running: %q, before: %q; want one more", during, before)
	}
	url := e.Endpoints()[0]
	stop()
	stopped(t, url)
	if after := databases(t, ctx, pg.DSN()); !slices.Equal(after, before) {
		t.Errorf("databases after stop: %q, before: %q", after, before)
	}
}

// A Postgres server Provide started is the target's to restart, and stop
// ends the reference server and it.
func TestProvideStartsPostgres(t *testing.T) {
	ctx := context.Background()
	popts := pgprovider.OptionsFromEnv()
	if popts.Kind == pgprovider.KindDSN || popts.DSN != "" {
		t.Skip("$" + pgprovider.EnvDSN + " borrows a server: Provide starts none")
	}
	popts.Fast = true
	e, stop, err := Provide(ctx, ProvideOptions{Postgres: popts, Embedded: EmbeddedOptions{Instances: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if !e.CanRestartPostgres() {
		t.Error("a Postgres server Provide started is not offered for restarts")
	}
	if n := len(e.Endpoints()); n != 2 {
		t.Errorf("%d instances, want 2", n)
	}
	serves(t, ctx, e)
	pgAt := e.opts.Postgres.DSN()
	url := e.Endpoints()[0]
	stop()
	stopped(t, url)
	cctx, cancel := context.WithTimeout(ctx, time.Minute) // a hang detector
	defer cancel()
	if conn, err := pgx.Connect(cctx, pgAt); err == nil {
		conn.Close(cctx)
		t.Errorf("the Postgres server Provide started still accepts connections after stop")
	}
}
