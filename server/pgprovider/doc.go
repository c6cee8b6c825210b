// Package pgprovider supplies a PostgreSQL server to kbkit's tests, the
// simulator, the load generator and `kbkit serve` (docs/postgres.md).
//
// Three providers, chosen by Options.Kind or, when it is empty, in this
// order:
//
//   - dsn: an existing server (KBKIT_PG_DSN). Nothing is started; Stop is a
//     no-op and Restart is unsupported.
//   - docker: a container via testcontainers-go, when a Docker engine
//     answers a short health probe. Image KBKIT_PG_IMAGE (default
//     postgres:16-alpine), started with the testcontainers postgres module
//     and a published port. With KBKIT_DOCKER_NETWORK=host the container
//     instead uses host networking and runs its own command (initdb, then
//     postgres on 127.0.0.1 on a port we pick, as user postgres), for an
//     image without an entrypoint such as the one scripts/pg-image.sh builds
//     from this machine's binaries; KBKIT_PG_BIN_IN_IMAGE (default
//     /usr/lib/postgresql/15/bin) says where initdb/postgres live in it.
//     testcontainers-go starts its Ryuk reaper from a registry image: where
//     no registry is reachable set TESTCONTAINERS_RYUK_DISABLED=true.
//     If the container fails during automatic selection, local is tried.
//   - local: a throwaway cluster made with this machine's initdb/postgres
//     (found on PATH or in /usr/lib/postgresql/*/bin, newest first;
//     KBKIT_PG_BINDIR restricts the search) in a fresh temp directory on a
//     free 127.0.0.1 port. As root, initdb and postgres run as user
//     postgres (else nobody; KBKIT_PG_USER overrides). A watchdog process
//     shuts the cluster down and deletes the directory if this process dies
//     without calling Stop.
//
// KBKIT_PG=dsn|docker|local forces a provider. If nothing works, Start's
// error lists every path tried, why it failed and how to fix it.
//
// Servers run with fsync and synchronous_commit on (as a stock pgbench
// setup) and max_connections=200; Options.Fast turns fsync off, which
// ForTest does.
//
// The local provider can also start a primary with one streaming standby
// (Options.Topology, KBKIT_PG_TOPOLOGY): sync-standby makes the standby
// synchronous (synchronous_standby_names='*' with synchronous_commit=on:
// a commit returns once the standby has flushed its WAL; remote_apply
// would also wait for the standby to replay it, which only matters to
// reads on the standby, and kbkit reads only from the primary), and
// async-standby leaves it asynchronous. The DSN names both nodes with
// target_session_attrs=read-write, so connections find whichever is the
// primary. Server.Failover loses the primary's machine (SIGKILL of every
// process, data directory deleted), promotes the standby and can seed a
// new standby on the lost address.
//
// Usage in a program:
//
//	srv, err := pgprovider.Start(ctx, pgprovider.OptionsFromEnv())
//	if err != nil {
//		return err
//	}
//	defer srv.Stop(context.Background())
//	dsn, drop, err := srv.NewDatabase(ctx, "") // fresh, uniquely named
//	if err != nil {
//		return err
//	}
//	defer drop(context.Background())
//	pool, err := pgxpool.New(ctx, dsn)
//
// Usage in tests (one shared server per test binary, a fresh database per
// test, dropped at cleanup):
//
//	func TestMain(m *testing.M) { os.Exit(pgprovider.RunTests(m)) }
//
//	func TestSomething(t *testing.T) {
//		dsn := pgprovider.ForTest(t)
//		...
//	}
package pgprovider
