package pgprovider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/subspace/kbkit/internal/procs"
)

// Topology is the shape of a local provider's servers.
type Topology string

const (
	// TopologySingle: one server (the default).
	TopologySingle Topology = "single"
	// TopologySyncStandby: a primary and one synchronous streaming standby
	// (synchronous_commit=on, synchronous_standby_names='*'): a commit is
	// acknowledged only once the standby has flushed its WAL, so a
	// promoted standby holds every acknowledged commit.
	TopologySyncStandby Topology = "sync-standby"
	// TopologyAsyncStandby: a primary and one asynchronous streaming
	// standby: a commit is acknowledged once it is on the primary's disk;
	// what the standby had not received yet when the primary is lost is
	// lost. For contrast with TopologySyncStandby.
	TopologyAsyncStandby Topology = "async-standby"
)

// EnvTopology selects the topology of the local provider (OptionsFromEnv).
const EnvTopology = "KBKIT_PG_TOPOLOGY"

// standbyAppName is the standby's application_name on the primary.
const standbyAppName = "kbkit_standby"

// replicationTimeout bounds the wait for a standby to stream (and to be
// synchronous).
const replicationTimeout = 60 * time.Second

// ParseTopology reads a topology name; "" is TopologySingle.
func ParseTopology(s string) (Topology, error) {
	switch t := Topology(strings.ToLower(strings.TrimSpace(s))); t {
	case "", TopologySingle:
		return TopologySingle, nil
	case TopologySyncStandby, TopologyAsyncStandby:
		return t, nil
	default:
		return "", fmt.Errorf("pgprovider: unknown topology %q (%s must be %s, %s or %s)", s, EnvTopology, TopologySingle, TopologySyncStandby, TopologyAsyncStandby)
	}
}

// HasStandby reports whether the topology has a standby to fail over to.
func (t Topology) HasStandby() bool { return t == TopologySyncStandby || t == TopologyAsyncStandby }

// replicaSet is a local primary with one streaming standby. Its DSN names
// both addresses with target_session_attrs=read-write, so a client finds
// whichever is primary; after a failover the replacement standby takes the
// lost primary's address, so DSNs handed out stay valid.
type replicaSet struct {
	opts    Options
	binDir  string
	sync    bool
	ports   [2]int // the DSN's hosts, in order
	primary *localCluster
	standby *localCluster // nil between a failover and the reseed
	// retired: old primaries left running by KeepPrimary.
	retired []*localCluster
}

func startReplicaSet(ctx context.Context, opts Options) (_ backend, err error) {
	binDir, err := findLocalBinaries(opts.BinDirs)
	if err != nil {
		return nil, err
	}
	if !isExecutable(filepath.Join(binDir, "pg_basebackup")) {
		return nil, fmt.Errorf("topology %s needs pg_basebackup, missing in %s", opts.Topology, binDir)
	}
	rs := &replicaSet{opts: opts, binDir: binDir, sync: opts.Topology == TopologySyncStandby}
	defer func() {
		if err != nil {
			_ = rs.stop(context.WithoutCancel(ctx))
		}
	}()
	if rs.primary, err = newLocalNode(opts, binDir, "primary-"); err != nil {
		return nil, err
	}
	rs.primary.extra = replicationArgs()
	if err := rs.primary.initdb(ctx); err != nil {
		return nil, err
	}
	if err := rs.primary.startOnPort(ctx, 0); err != nil {
		return nil, err
	}
	if err := rs.addStandby(ctx, 0); err != nil {
		return nil, err
	}
	rs.ports = [2]int{rs.primary.port, rs.standby.port}
	opts.logf("%s: primary 127.0.0.1:%d, standby 127.0.0.1:%d", opts.Topology, rs.primary.port, rs.standby.port)
	return rs, nil
}

// replicationArgs are the settings every node of a replica set runs with,
// so that a promoted standby can serve a new standby in turn.
func replicationArgs() []string {
	return []string{
		"-c", "wal_level=replica",
		"-c", "max_wal_senders=10",
		"-c", "wal_keep_size=256MB",
		"-c", "hot_standby=on",
		// A standby whose primary restarted reconnects within 200ms, not 5s.
		"-c", "wal_retrieve_retry_interval=200ms",
		// A primary cut off from its standby drops the WAL sender (and
		// with it the synchronous standby a fenced store checks for,
		// store.OpenOptions.Fence) after 3 s, not 60.
		"-c", "wal_sender_timeout=3s",
	}
}

// addStandby makes a standby of the current primary with pg_basebackup
// (on port, 0 for a free one), waits until it streams and, for
// sync-standby, until the primary counts it as synchronous.
func (rs *replicaSet) addStandby(ctx context.Context, port int) (err error) {
	sb, err := newLocalNode(rs.opts, rs.binDir, "standby-")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = sb.stop(context.WithoutCancel(ctx))
		}
	}()
	sb.extra = replicationArgs()
	conninfo := fmt.Sprintf("host=127.0.0.1 port=%d user=postgres application_name=%s", rs.primary.port, standbyAppName)
	// -R writes standby.signal and primary_conninfo; -X stream copies the
	// WAL written during the copy; -c fast starts with an immediate
	// checkpoint.
	cmd := exec.CommandContext(ctx, filepath.Join(rs.binDir, "pg_basebackup"),
		"-D", sb.data, "-d", conninfo, "-X", "stream", "-R", "-c", "fast", "--no-sync")
	sb.prepare(cmd)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pg_basebackup from port %d failed: %v\n%s", rs.primary.port, err, tail(out, 2000))
	}
	if err := sb.startOnPort(ctx, port); err != nil && port != 0 && sb.bindFailed() {
		// The lost primary's address is taken: use another. DSNs handed out
		// earlier then name only the new primary.
		rs.opts.logf("port %d is taken, standby on a free port: %v", port, err)
		err = sb.startOnPort(ctx, 0)
		if err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	if err := rs.awaitReplication(ctx, sb.port); err != nil {
		return fmt.Errorf("standby on port %d: %w%s", sb.port, err, sb.logTail())
	}
	rs.standby = sb
	return nil
}

// awaitReplication waits until the primary streams to the standby and, for
// sync-standby, sets synchronous_standby_names and waits until the standby
// is synchronous. ALTER SYSTEM, not a command-line -c, so that a promoted
// standby can reset it.
func (rs *replicaSet) awaitReplication(ctx context.Context, port int) error {
	ctx, cancel := context.WithTimeout(ctx, replicationTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, rs.primary.dsn())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	want := "async"
	if rs.sync {
		if _, err := conn.Exec(ctx, `ALTER SYSTEM SET synchronous_standby_names = '*'`); err != nil {
			return err
		}
		if _, err := conn.Exec(ctx, `SELECT pg_reload_conf()`); err != nil {
			return err
		}
		want = "sync"
	}
	var last string
	for {
		var state, syncState string
		err := conn.QueryRow(ctx, `SELECT state, sync_state FROM pg_stat_replication WHERE application_name = $1`, standbyAppName).
			Scan(&state, &syncState)
		if err == nil && state == "streaming" && syncState == want {
			return nil
		}
		if err == nil {
			last = state + "/" + syncState
		} else if !errors.Is(err, pgx.ErrNoRows) {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not streaming as %s within %s (last: %q)", want, replicationTimeout, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (rs *replicaSet) dsn() string {
	return fmt.Sprintf("host=127.0.0.1,127.0.0.1 port=%d,%d user=postgres dbname=postgres sslmode=disable connect_timeout=5 target_session_attrs=read-write",
		rs.ports[0], rs.ports[1])
}

// restart restarts the primary (the standby reconnects by itself).
func (rs *replicaSet) restart(ctx context.Context) error {
	if err := rs.primary.stopPostmaster(ctx); err != nil {
		rs.opts.logf("restart: %v", err)
	}
	return rs.primary.startPostgres(ctx)
}

func (rs *replicaSet) stop(ctx context.Context) error {
	var err error
	for _, n := range append([]*localCluster{rs.standby, rs.primary}, rs.retired...) {
		if n != nil {
			err = errors.Join(err, n.stop(ctx))
		}
	}
	return err
}

// FailoverOptions shape Server.Failover.
type FailoverOptions struct {
	// Stall stops the primary's WAL sender for this long before the
	// primary is lost, as a replication link that lags: a synchronous
	// primary then acknowledges nothing during the stall, an asynchronous
	// one acknowledges commits the standby never receives.
	Stall time.Duration
	// Stalled, if set, is called once the WAL sender is stopped (with
	// Stall > 0); the primary is lost when it has returned and Stall has
	// passed, so a caller can wait for what it wants to see happen during
	// the stall (commits acknowledged by an asynchronous primary).
	Stalled func(ctx context.Context)
	// Detect is how long after the loss the standby is promoted: the time
	// a failover manager takes to notice (0: at once). Meanwhile there is
	// no primary at all.
	Detect time.Duration
	// Reseed makes a new standby of the new primary (pg_basebackup) on the
	// lost primary's address once the promotion is done, so the set can
	// fail over again; sync-standby waits until it is synchronous.
	Reseed bool
	// Promoted, if set, is called as soon as the standby accepts writes
	// (before the reseed).
	Promoted func(at time.Time)
	// KeepPrimary leaves the old primary running (a machine cut off by the
	// network, not lost: split.go) instead of killing it; it is stopped
	// with the Server. Reseed is then refused (its address is taken).
	KeepPrimary bool
}

// FailoverReport is what Failover did and when.
type FailoverReport struct {
	Lost        time.Time // the primary's processes were killed
	Promoted    time.Time // the standby accepted writes
	Reseeded    time.Time // the new standby streams (zero without Reseed)
	NewPrimary  string    // address of the new primary
	LostPrimary string    // address of the lost one
}

// Failover loses the primary's machine and promotes the standby: the
// primary's postmaster and every backend get SIGKILL at once, its data
// directory is deleted, then `pg_ctl promote` turns the standby into the
// primary (with synchronous_standby_names reset: until a new standby is
// synchronous, commits are acknowledged by the new primary alone). Only
// the local provider's sync-standby and async-standby topologies can fail
// over. Connections of a target_session_attrs=read-write DSN (DSN) find
// the new primary by themselves.
func (s *Server) Failover(ctx context.Context, opts FailoverOptions) (FailoverReport, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return FailoverReport{}, errors.New("pgprovider: Failover after Stop")
	}
	rs, ok := s.b.(*replicaSet)
	if !ok {
		return FailoverReport{}, fmt.Errorf("pgprovider: Failover needs topology %s or %s (%s)", TopologySyncStandby, TopologyAsyncStandby, EnvTopology)
	}
	return rs.failover(ctx, opts)
}

// Topology reports the server's topology.
func (s *Server) Topology() Topology {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rs, ok := s.b.(*replicaSet); ok {
		return rs.opts.Topology
	}
	return TopologySingle
}

func (rs *replicaSet) failover(ctx context.Context, opts FailoverOptions) (FailoverReport, error) {
	var rep FailoverReport
	if rs.standby == nil {
		return rep, errors.New("pgprovider: no standby to fail over to (the last reseed failed)")
	}
	old, sb := rs.primary, rs.standby
	rep.LostPrimary = fmt.Sprintf("127.0.0.1:%d", old.port)
	if opts.KeepPrimary && opts.Reseed {
		return rep, errors.New("pgprovider: KeepPrimary and Reseed: the old primary keeps its address")
	}
	if opts.Stall > 0 {
		if err := rs.stallSender(ctx, opts.Stall, opts.Stalled); err != nil {
			return rep, fmt.Errorf("pgprovider: stall replication: %w", err)
		}
	}
	// The machine is gone: every process at once (the postmaster and each
	// backend, the stalled WAL sender included: each is its own session),
	// then its disk.
	switch {
	case opts.KeepPrimary:
		rs.retired = append(rs.retired, old)
	case old.cmd != nil:
		procs.KillTree(old.cmd.Process.Pid)
		<-old.exited
		old.cmd = nil
	}
	rep.Lost = time.Now()
	if !opts.KeepPrimary {
		if err := old.stop(ctx); err != nil {
			rs.opts.logf("failover: removing the lost primary: %v", err)
		}
	}
	rs.primary, rs.standby = sb, nil
	if opts.Detect > 0 {
		select {
		case <-time.After(opts.Detect):
		case <-ctx.Done():
			return rep, ctx.Err()
		}
	}

	promote := exec.CommandContext(ctx, filepath.Join(rs.binDir, "pg_ctl"), "promote", "-w", "-t", "60", "-D", sb.data)
	sb.prepare(promote)
	if out, err := promote.CombinedOutput(); err != nil {
		return rep, fmt.Errorf("pgprovider: pg_ctl promote failed: %v\n%s%s", err, tail(out, 2000), sb.logTail())
	}
	if err := resetSyncNames(ctx, sb.dsn()); err != nil {
		return rep, fmt.Errorf("pgprovider: after promotion: %w", err)
	}
	rep.Promoted = time.Now()
	rep.NewPrimary = fmt.Sprintf("127.0.0.1:%d", sb.port)
	rs.opts.logf("failover: primary %s lost, standby %s promoted", rep.LostPrimary, rep.NewPrimary)
	if opts.Promoted != nil {
		opts.Promoted(rep.Promoted)
	}
	if !opts.Reseed {
		return rep, nil
	}
	lostPort := old.port
	if err := rs.addStandby(ctx, lostPort); err != nil {
		return rep, fmt.Errorf("pgprovider: reseed: %w", err)
	}
	for i, p := range rs.ports {
		if p == lostPort {
			rs.ports[i] = rs.standby.port
		}
	}
	rep.Reseeded = time.Now()
	return rep, nil
}

// resetSyncNames makes a promoted standby acknowledge commits alone until
// a new standby is synchronous (the setting may have come with the base
// backup).
func resetSyncNames(ctx context.Context, dsn string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `ALTER SYSTEM RESET synchronous_standby_names`); err != nil {
		return err
	}
	_, err = conn.Exec(ctx, `SELECT pg_reload_conf()`)
	return err
}

// stallSender stops the primary's WAL sender (SIGSTOP) for d (and until
// stalled, if set, has returned): the standby receives nothing meanwhile.
// The primary is lost right after, so the sender is never continued
// unless ctx ends first.
func (rs *replicaSet) stallSender(ctx context.Context, d time.Duration, stalled func(context.Context)) error {
	conn, err := pgx.Connect(ctx, rs.primary.dsn())
	if err != nil {
		return err
	}
	// The standby may be reconnecting (after a restart of the primary).
	var pid int
	for deadline := time.Now().Add(replicationTimeout); ; {
		err = conn.QueryRow(ctx, `SELECT pid FROM pg_stat_replication WHERE application_name = $1`, standbyAppName).Scan(&pid)
		if !errors.Is(err, pgx.ErrNoRows) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = conn.Close(context.WithoutCancel(ctx))
	if err != nil {
		return fmt.Errorf("no WAL sender to the standby: %w", err)
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	if err := pause(p); err != nil {
		return err
	}
	until := time.After(d)
	if stalled != nil {
		stalled(ctx)
	}
	select {
	case <-until:
		return nil
	case <-ctx.Done():
		_ = resume(p)
		return ctx.Err()
	}
}
