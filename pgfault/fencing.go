package pgfault

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/subspace/kbkit/pgfault/netfault"
	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/server/store"
)

// ScenarioSplitBrain: the old primary stays alive. At Before the link
// between the primary and the standby is cut (a blackhole), and so is the
// link between the first instance and the primary; the other instances
// still reach it. Detect later the standby is promoted while the old
// primary runs on, isolated, to the end. With a synchronous standby a
// commit on the old primary waits for an acknowledgement that never
// comes; an instance that gives up waiting leaves a commit that only the
// old primary holds. Nothing acknowledged may be lost, and no client may
// be told of such a commit (store.OpenOptions.Fence).
const ScenarioSplitBrain = "split-brain"

// splitLinks are the fault layer of the split brain: the standby's
// replication link and, per instance, its links to the primary and the
// standby (dsns[i] reaches both through them).
type splitLinks struct {
	primary, standby string
	repl             *netfault.Link
	toPrimary        []*netfault.Link
	all              []*netfault.Link
	dsns             []string
}

func newSplitLinks(ctx context.Context, pg *pgprovider.Server, dsn string, instances int) (_ *splitLinks, err error) {
	primary, standby, err := pg.Nodes()
	if err != nil {
		return nil, err
	}
	s := &splitLinks{primary: primary, standby: standby}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	listen := func(to string) (*netfault.Link, error) {
		l, err := netfault.Listen(to)
		if err == nil {
			s.all = append(s.all, l)
		}
		return l, err
	}
	if s.repl, err = listen(primary); err != nil {
		return nil, err
	}
	if err := pg.RouteReplication(ctx, s.repl.Addr); err != nil {
		return nil, err
	}
	for range instances {
		p, err := listen(primary)
		if err != nil {
			return nil, err
		}
		sb, err := listen(standby)
		if err != nil {
			return nil, err
		}
		d, err := netfault.ThroughLinks(dsn, map[string]*netfault.Link{primary: p, standby: sb})
		if err != nil {
			return nil, err
		}
		// A connection attempt to the cut-off primary gives up after 2 s
		// (not 5) and the DSN's next host, the standby, is tried.
		d = strings.Replace(d, "connect_timeout=5", "connect_timeout=2", 1)
		s.toPrimary = append(s.toPrimary, p)
		s.dsns = append(s.dsns, d)
	}
	return s, nil
}

func (s *splitLinks) close() {
	for _, l := range s.all {
		l.Close()
	}
}

// onlyHost is dsn with host as its one host.
func onlyHost(dsn, host string) string {
	d, err := netfault.WithHosts(dsn, []string{host})
	if err != nil {
		return dsn
	}
	return d
}

// splitBrain isolates the primary, promotes the standby with the old
// primary kept running, and opens the new primary's store for the checks.
func (r *run) splitBrain(ctx context.Context, pg *pgprovider.Server) (pgprovider.FailoverReport, error) {
	cfg := r.cfg
	if err := r.split.repl.Apply(netfault.Blackhole); err != nil {
		return pgprovider.FailoverReport{}, err
	}
	if err := r.split.toPrimary[0].Apply(netfault.Blackhole); err != nil {
		return pgprovider.FailoverReport{}, err
	}
	cfg.logf("split brain: the primary is cut off from the standby and from instance 0; instances 1.. still reach it")
	var db *store.Store
	rep, err := pg.Failover(ctx, pgprovider.FailoverOptions{Detect: max(0, cfg.Detect), KeepPrimary: true,
		Promoted: func(at time.Time) {
			var oerr error
			if db, oerr = store.Open(ctx, onlyHost(r.split.dsns[0], r.split.standby)); oerr != nil {
				db, oerr = store.Open(ctx, onlyHost(pg.DSN(), r.split.standby))
			}
			if oerr != nil {
				cfg.logf("split brain: the new primary's store: %v", oerr)
			}
			r.newPrimary = db
			r.promotedAt = at
			if db != nil {
				r.heads = r.readHeads(ctx, db)
			}
			close(r.promoted)
			cfg.logf("split brain: standby promoted, the old primary still runs; page heads %v", r.heads)
		}})
	if err == nil && db == nil {
		err = fmt.Errorf("failover: cannot open the new primary %s", r.split.standby)
	}
	return rep, err
}

// SplitBrain is what the split-brain scenario measures.
type SplitBrain struct {
	Fenced bool `json:"fenced"`
	// OldPrimaryOnly: commands committed in the old primary's log and not
	// in the new primary's (commits whose wait for the standby was given
	// up); ToldClients: how many of them a client was told of (an answer
	// or an echo), which must be 0.
	OldPrimaryOnly int `json:"old_primary_only"`
	ToldClients    int `json:"told_clients"`
}

// splitFigures reads the old primary's log (directly, around the fault
// layer: it is alive) and compares it with the new primary's.
func (r *run) splitFigures(ctx context.Context, res *Result, final map[string][]store.Entry) {
	sb := &SplitBrain{Fenced: !r.cfg.NoFence, OldPrimaryOnly: -1, ToldClients: -1}
	res.SplitBrain = sb
	onNew := map[string]bool{}
	for _, log := range final {
		for _, e := range log {
			onNew[e.Cmd.ID] = true
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, onlyHost(r.split.dsns[0], r.split.primary))
	if err == nil {
		// The old primary holds more than this run's pages? Only its own.
		var pages []string
		for _, p := range r.pages {
			pages = append(pages, p.id)
		}
		var ids []string
		rows, qerr := conn.Query(cctx, `SELECT id::text FROM command_log WHERE outcome = 'committed' AND page_id = ANY($1::uuid[])`, pages)
		if qerr == nil {
			ids, qerr = pgx.CollectRows(rows, pgx.RowTo[string])
		}
		_ = conn.Close(ctx)
		err = qerr
		if err == nil {
			told := map[string]bool{}
			r.mu.Lock()
			for _, id := range r.seen {
				told[id] = true
			}
			for id := range r.acks {
				told[id] = true
			}
			r.mu.Unlock()
			sb.OldPrimaryOnly, sb.ToldClients = 0, 0
			for _, id := range ids {
				if !onNew[id] {
					sb.OldPrimaryOnly++
					if told[id] {
						sb.ToldClients++
					}
				}
			}
		}
	}
	if err != nil {
		res.Findings = append(res.Findings, fmt.Sprintf("split brain: cannot read the old primary's log: %v", err))
		return
	}
	if sb.ToldClients > 0 {
		res.Findings = append(res.Findings, fmt.Sprintf("split brain: %d commits only the old primary holds were told to clients (answered or echoed)", sb.ToldClients))
	}
}
