package pgprovider

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// A sync-standby set fails over twice through one multi-host DSN: rows
// committed before each failover are on the promoted standby, the lost
// primary's data directory is gone, and the reseeded standby is
// synchronous again.
func TestSyncStandbyFailsOverAndBack(t *testing.T) {
	ctx := ctxT(t)
	srv, err := Start(ctx, Options{Kind: KindLocal, Fast: true, Topology: TopologySyncStandby, Logf: t.Logf})
	if err != nil {
		t.Fatalf("Start sync-standby: %v", err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	if srv.Topology() != TopologySyncStandby {
		t.Fatalf("Topology = %s", srv.Topology())
	}
	if dsn := srv.DSN(); !strings.Contains(dsn, "target_session_attrs=read-write") || !strings.Contains(dsn, ",") {
		t.Fatalf("DSN %q is not a multi-host read-write DSN", dsn)
	}
	dsn, drop, err := srv.NewDatabase(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer drop(context.Background())
	conn := connect(t, dsn)
	mustExec(t, conn, `CREATE TABLE t (n int)`)
	if got := queryInt(t, conn, `SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'`); got != 1 {
		t.Fatalf("%d synchronous standbys, want 1", got)
	}
	for round := 1; round <= 3; round++ {
		mustExec(t, conn, `INSERT INTO t VALUES ($1)`, round)
		lostDir := srv.b.(*replicaSet).primary.dir
		rep, err := srv.Failover(ctx, FailoverOptions{Reseed: true, Stall: time.Duration(round-1) * 100 * time.Millisecond})
		if err != nil {
			t.Fatalf("round %d: Failover: %v", round, err)
		}
		if _, err := os.Stat(lostDir); !os.IsNotExist(err) {
			t.Fatalf("round %d: the lost primary's directory %s still exists (%v)", round, lostDir, err)
		}
		if rep.Promoted.Before(rep.Lost) || rep.Reseeded.Before(rep.Promoted) || rep.NewPrimary == rep.LostPrimary {
			t.Fatalf("round %d: report out of order: %+v", round, rep)
		}
		if _, err := conn.Exec(ctx, `SELECT 1`); err == nil {
			t.Fatalf("round %d: the connection to the lost primary still answers", round)
		}
		conn = connect(t, dsn) // the same DSN finds the new primary
		if got := queryInt(t, conn, `SELECT count(*) FROM t`); got != round {
			t.Fatalf("round %d: %d rows on the new primary, want %d", round, got, round)
		}
		if got := queryInt(t, conn, `SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'`); got != 1 {
			t.Fatalf("round %d: %d synchronous standbys after the reseed, want 1", round, got)
		}
	}
}

// Without a standby topology, Failover is an error, not a silent restart.
func TestFailoverNeedsAStandby(t *testing.T) {
	srv := startLocalT(t, true)
	if _, err := srv.Failover(ctxT(t), FailoverOptions{}); err == nil || !strings.Contains(err.Error(), "sync-standby") {
		t.Fatalf("Failover on a single server: %v", err)
	}
	if _, err := Start(ctxT(t), Options{Kind: KindDSN, DSN: "postgres://x@127.0.0.1:1/x", Topology: TopologySyncStandby}); err == nil {
		t.Fatal("a standby topology on the dsn provider started")
	}
	if _, err := ParseTopology("triple"); err == nil {
		t.Fatal(`ParseTopology("triple") succeeded`)
	}
}

// An asynchronous standby streams without being synchronous.
func TestAsyncStandbyIsAsync(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := Start(ctx, Options{Kind: KindLocal, Fast: true, Topology: TopologyAsyncStandby})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(context.Background())
	conn := connect(t, srv.DSN())
	if got := queryInt(t, conn, `SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming' AND sync_state = 'async'`); got != 1 {
		t.Fatalf("%d asynchronous streaming standbys, want 1", got)
	}
}
