package pgfault

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/pgfault/netfault"
	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/server/store"
	"github.com/subspace/kbkit/target"
)

// Config is one measurement. The zero value is the default run: a
// synchronous standby, 6 writers, 2 s of load before the failover and 2 s
// after the promotion.
type Config struct {
	// Topology: pgprovider.TopologySyncStandby (default) or
	// TopologyAsyncStandby.
	Topology pgprovider.Topology
	// Writers (default 6); Shared of them (default half, rounded up) edit
	// one shared page, each of the others a page of its own.
	Writers, Shared int
	// Instances of the reference server on the database (default 2);
	// writers are spread over them.
	Instances int
	// Before is the load before the failover begins (default 2s); After
	// the load once the standby is promoted (default 2s).
	Before, After time.Duration
	// Think is each writer's pause between its commands (default 20ms).
	Think time.Duration
	// Stall is how long the replication link lags before the primary is
	// lost (default 300ms; negative: no stall). With an asynchronous standby the stall also
	// lasts until StallAcks commands were acknowledged during it (default
	// 5, for at most 2 s more), so that what is lost does not depend on
	// luck.
	Stall     time.Duration
	StallAcks int
	// Detect is the time from the loss to the promotion, as a failover
	// manager takes to notice (default 1s; negative: promote at once): no
	// primary at all meanwhile.
	Detect time.Duration
	// NoReseed skips seeding a new standby after the promotion.
	NoReseed bool
	// Settle bounds the wait for commands in flight and for every window
	// to converge once the load ends (default 10s).
	Settle time.Duration
	// Fault, when set, replaces the failover by a fault of the link
	// between the server instances and Postgres (a netfault proxy on
	// loopback) held for Hold (default 3s), then healed; the topology is
	// then single by default (partition.go).
	Fault string
	Hold  time.Duration
	// Scenario: "" (the primary's machine is lost) or ScenarioSplitBrain
	// (fencing.go); NoFence runs the instances without store fencing (to
	// show what it prevents).
	Scenario string
	NoFence  bool
	// Soak, when set with Fault, is how long the faults go on: each of
	// Faults in turn (default every one) for Hold, then Gap (default
	// 20s) of a healthy link; the server runs as ServerBinary serve (a
	// process of its own, sampled every SampleEvery) and what was
	// acknowledged is checked and forgotten every AuditEvery (soak.go).
	Soak         time.Duration
	Faults       []string
	Gap          time.Duration
	ServerBinary string
	SampleEvery  time.Duration
	AuditEvery   time.Duration
	// Warmup: samples before it are not judged (default a fifth of Soak,
	// at least MinWarmup).
	Warmup time.Duration
	// MaxNodes caps the nodes of each writer (default none; a soak sets
	// 12): past it a writer only edits, so its page stops growing.
	MaxNodes int
	// Seed seeds the writers' choices.
	Seed int64
	// Logf receives progress messages.
	Logf func(format string, args ...any)
}

func (c *Config) defaults() error {
	if c.Soak > 0 {
		if err := c.soakDefaults(); err != nil {
			return err
		}
	}
	if c.Topology == "" {
		c.Topology = pgprovider.TopologySyncStandby
		if c.Fault != "" {
			c.Topology = pgprovider.TopologySingle
		}
	}
	t, err := pgprovider.ParseTopology(string(c.Topology))
	if err != nil {
		return err
	}
	switch c.Scenario {
	case "", ScenarioSplitBrain:
	default:
		return fmt.Errorf("failover: unknown scenario %q (%q or %q)", c.Scenario, "", ScenarioSplitBrain)
	}
	if c.Scenario == ScenarioSplitBrain && t != pgprovider.TopologySyncStandby {
		return fmt.Errorf("failover: the %s scenario needs %s", ScenarioSplitBrain, pgprovider.TopologySyncStandby)
	}
	if c.Fault != "" {
		if _, err := netfault.Parse(c.Fault); err != nil {
			return err
		}
		if c.Hold < 0 {
			return errors.New("failover: --hold must not be negative")
		}
		if c.Hold == 0 {
			c.Hold = 3 * time.Second
		}
	} else if !t.HasStandby() {
		return fmt.Errorf("failover: topology %s has no standby to fail over to (use %s or %s)", t, pgprovider.TopologySyncStandby, pgprovider.TopologyAsyncStandby)
	}
	c.Topology = t
	switch {
	case c.Writers < 0, c.Shared < 0, c.Instances < 0, c.Before < 0, c.After < 0, c.Think < 0, c.Settle < 0, c.StallAcks < 0:
		return errors.New("failover: counts and durations must not be negative (but --stall and --detect)")
	case c.Writers > 256:
		return fmt.Errorf("failover: %d writers: at most 256", c.Writers)
	}
	if c.Writers == 0 {
		c.Writers = 6
	}
	if c.Shared == 0 {
		c.Shared = (c.Writers + 1) / 2
	}
	if c.Shared > c.Writers {
		return fmt.Errorf("failover: %d shared writers of %d", c.Shared, c.Writers)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.Instances == 0 {
		c.Instances = 2
	}
	def(&c.Before, 2*time.Second)
	def(&c.After, 2*time.Second)
	def(&c.Think, 20*time.Millisecond)
	def(&c.Stall, 300*time.Millisecond)
	def(&c.Detect, time.Second)
	def(&c.Settle, 10*time.Second)
	if c.StallAcks == 0 {
		c.StallAcks = 5
	}
	return nil
}

func (c *Config) logf(format string, args ...any) {
	if c.Logf != nil {
		c.Logf(format, args...)
	}
}

// run is the state of one measurement.
type run struct {
	cfg     Config
	pages   []*page
	writers []*writer
	begin   time.Time
	loadEnd time.Time // when the writers stopped issuing commands

	mu sync.Mutex
	// acks: each id answered committed, with the seq of its first answer;
	// ackSeqs: every seq an id was answered with.
	acks    map[string]ack
	ackSeqs map[string]map[int64]bool
	// ackTimes: every committed answer; slowest: the longest time from a
	// command's issue to its committed answer.
	ackTimes []time.Time
	slowest  time.Duration
	// dupAnswers: committed answers marked duplicate (a retry of an id
	// that had committed, its first answer lost).
	dupAnswers int
	// seen: what clients were told each (page, seq) holds, by an answer
	// or an echo; reused: slots told to hold two different ids.
	seen     map[slot]string
	reused   map[slot]bool
	failed   []span // attempts that were not decided
	answered []span // every attempt, answered or failed (partition.go)
	// faultAt, healAt: when the link fault began and ended (partition.go).
	faultAt, healAt time.Time
	soak            soakState // soak.go
	// split brain (fencing.go): the links, and the new primary's store.
	split      *splitLinks
	newPrimary *store.Store
	attempts   int
	rejected   []string
	refused    []string // answers that are neither a decision nor retryable
	lastFail   time.Time

	nAcks atomic.Int64
	// promoted is closed once promotedAt and heads (each page's head seq
	// on the new primary at the promotion) are set.
	promoted   chan struct{}
	promotedAt time.Time
	heads      map[string]int64
}

type ack struct {
	page string
	seq  int64
	at   time.Time
}

type slot struct {
	page string
	seq  int64
}

type span struct{ from, to time.Time }

type page struct {
	id     string
	shared bool
	wins   []*writer
}

// Run starts Postgres with cfg.Topology, the reference server's instances
// and the writers, fails over mid-load, and returns the figures. An error
// means the measurement could not be made (nothing to judge).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		t.MaxIdleConnsPerHost = max(t.MaxIdleConnsPerHost, 64)
	}
	r := &run{cfg: cfg, acks: map[string]ack{}, ackSeqs: map[string]map[int64]bool{},
		seen: map[slot]string{}, reused: map[slot]bool{}, promoted: make(chan struct{})}

	popts := pgprovider.OptionsFromEnv()
	popts.Kind = pgprovider.KindLocal
	popts.Topology = cfg.Topology
	popts.Logf = cfg.Logf
	pg, err := pgprovider.Start(ctx, popts)
	if err != nil {
		return nil, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_ = pg.Stop(sctx)
	}()
	dsn, _, err := pg.NewDatabase(ctx, "")
	if err != nil {
		return nil, err
	}
	serverDSN, restartable := dsn, pg
	var links *faultLinks
	if cfg.Fault != "" {
		if links, err = newFaultLinks(dsn); err != nil {
			return nil, err
		}
		defer links.close()
		serverDSN, restartable = links.dsn, nil
	}
	// The run's own view of the database, for the heads at the promotion
	// and the log at the end; it finds the new primary like the servers.
	db, err := store.Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var tgt target.Target
	var proc *serverProcess
	if cfg.Scenario == ScenarioSplitBrain {
		if r.split, err = newSplitLinks(ctx, pg, dsn, cfg.Instances); err != nil {
			return nil, err
		}
		defer r.split.close()
		e, err := target.NewEmbedded(ctx, dsn, target.EmbeddedOptions{Instances: cfg.Instances, DSNs: r.split.dsns, Fence: !cfg.NoFence})
		if err != nil {
			return nil, err
		}
		defer e.Close()
		tgt = e
	} else if cfg.ServerBinary != "" {
		if proc, err = startServerProcess(ctx, cfg.ServerBinary, serverDSN, db); err != nil {
			return nil, err
		}
		defer proc.stop()
		tgt = proc
	} else {
		e, err := target.NewEmbedded(ctx, serverDSN, target.EmbeddedOptions{Instances: cfg.Instances, Postgres: restartable})
		if err != nil {
			return nil, err
		}
		defer e.Close()
		tgt = e
	}

	if err := r.setup(ctx, tgt); err != nil {
		return nil, err
	}
	defer r.closeWindows()
	var stopSoak func(*Result)
	if cfg.Soak > 0 {
		stopSoak = r.soakWatch(ctx, proc, db)
	}
	res, err := r.load(ctx, pg, db, links)
	if stopSoak != nil {
		stopSoak(res)
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// setup pairs a device per writer, creates the pages and opens the
// windows.
func (r *run) setup(ctx context.Context, target target.Target) error {
	cfg := r.cfg
	tokens, err := target.Devices(ctx, cfg.Writers)
	if err != nil {
		return err
	}
	eps := target.Endpoints()
	shared := &page{id: uuid.NewString(), shared: true}
	r.pages = append(r.pages, shared)
	for i := 0; i < cfg.Writers; i++ {
		c := client.New(eps[i%len(eps)], tokens[i])
		me, err := c.Whoami(ctx)
		if err != nil {
			return fmt.Errorf("failover: whoami of writer %d: %w", i, err)
		}
		p := shared
		if i >= cfg.Shared {
			p = &page{id: uuid.NewString()}
			r.pages = append(r.pages, p)
		}
		w := newWriter(r, i, c, me.DeviceID, p)
		p.wins = append(p.wins, w)
		r.writers = append(r.writers, w)
		if len(p.wins) == 1 {
			env := kbcore.Envelope{ID: uuid.NewString(), DeviceID: me.DeviceID, PageID: p.id, Type: kbcore.TypeCreatePage,
				Payload: jsonOf(map[string]any{"title": fmt.Sprintf("failover %s page %d", cfg.Topology, len(r.pages)-1)})}
			if err := setupCommand(ctx, c, env); err != nil {
				return fmt.Errorf("failover: create page: %w", err)
			}
		}
	}
	for _, w := range r.writers {
		if err := w.open(ctx); err != nil {
			return err
		}
	}
	cfg.logf("failover: %d writers on %d pages (%d on the shared page), %d instances", cfg.Writers, len(r.pages), cfg.Shared, cfg.Instances)
	return nil
}

// setupCommand posts a setup command until it is decided; it must commit.
func setupCommand(ctx context.Context, c *client.Client, env kbcore.Envelope) error {
	for attempt := 0; ; attempt++ {
		_, rej, err := c.Submit(ctx, env)
		switch {
		case err == nil && rej == nil:
			return nil
		case rej != nil:
			return fmt.Errorf("%s rejected: %s", env.Type, rej.Code)
		case !client.IsRetryable(err) || attempt > 40:
			return err
		}
		sleep(ctx, 100*time.Millisecond)
	}
}

// load runs the writers, fails over after Before, keeps the load on until
// After past the promotion, lets everything settle and checks the log.
func (r *run) load(ctx context.Context, pg *pgprovider.Server, db *store.Store, links *faultLinks) (*Result, error) {
	cfg := r.cfg
	loadCtx, stopLoad := context.WithCancel(ctx)
	// Commands in flight when the load stops are still decided, within
	// Settle.
	opCtx, stopOps := context.WithCancel(context.WithoutCancel(ctx))
	r.begin = time.Now()
	var wg sync.WaitGroup
	for _, w := range r.writers {
		wg.Go(func() { w.run(loadCtx, opCtx) })
	}
	defer func() { stopLoad(); stopOps(); wg.Wait() }()

	var stallAt time.Time
	fo := pgprovider.FailoverOptions{
		Stall:  max(0, cfg.Stall),
		Detect: max(0, cfg.Detect),
		Reseed: !cfg.NoReseed,
		Stalled: func(sctx context.Context) {
			stallAt = time.Now()
			cfg.logf("failover: replication stalled")
			if cfg.Topology == pgprovider.TopologyAsyncStandby {
				r.awaitAcks(sctx, r.nAcks.Load()+int64(cfg.StallAcks), 2*time.Second+cfg.Stall)
			}
		},
		Promoted: func(at time.Time) {
			r.promotedAt, r.heads = at, r.readHeads(ctx, db)
			close(r.promoted)
			cfg.logf("failover: standby promoted; page heads %v", r.heads)
		},
	}
	var rep pgprovider.FailoverReport
	var foErr error
	select {
	case <-time.After(cfg.Before):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	converged := make(chan map[*writer]time.Time, 1)
	foDone := make(chan struct{})
	go func() {
		defer close(foDone)
		if r.split != nil {
			rep, foErr = r.splitBrain(ctx, pg)
			return
		}
		if links != nil && cfg.Soak > 0 {
			foErr = r.soakFaults(ctx, links, db)
			return
		}
		if links != nil {
			foErr = r.partition(ctx, links, db)
			return
		}
		rep, foErr = pg.Failover(ctx, fo)
	}()
	// Promotion, then After of load (the reseed may still run).
	select {
	case <-r.promoted:
	case <-foDone:
		select {
		case <-r.promoted:
		default:
			return nil, fmt.Errorf("failover: %w", foErr)
		}
	}
	promotedAt := r.promotedAt
	go func() { converged <- r.watchConvergence(opCtx, promotedAt, r.heads) }()
	sleep(ctx, cfg.After)
	r.loadEnd = time.Now()
	stopLoad()
	<-foDone
	if foErr != nil {
		return nil, fmt.Errorf("failover: %w", foErr)
	}
	settleBy := time.Now().Add(cfg.Settle)
	stopTimer := time.AfterFunc(cfg.Settle, stopOps)
	wg.Wait()
	if r.newPrimary != nil {
		db = r.newPrimary // split brain: the old primary is still up
	}
	final, err := r.logs(context.WithoutCancel(ctx), db)
	if err != nil {
		stopTimer.Stop()
		return nil, err
	}
	settled := r.settle(settleBy, final)
	stopTimer.Stop()
	stopOps()
	conv := <-converged

	res := r.result(final, settled, conv, promotedAt)
	res.Timeline = Timeline{Stalled: sub(stallAt, r.begin), Lost: sub(rep.Lost, r.begin), Promoted: sub(promotedAt, r.begin),
		Reseeded: sub(rep.Reseeded, r.begin), LoadEnd: sub(r.loadEnd, r.begin)}
	res.LostPrimary, res.NewPrimary = rep.LostPrimary, rep.NewPrimary
	if r.split != nil {
		r.splitFigures(context.WithoutCancel(ctx), res, final)
	}
	if links != nil && cfg.Soak == 0 {
		r.faultFigures(res)
	}
	return res, nil
}

func sub(t, from time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return t.Sub(from)
}

// awaitAcks waits until n commands are acknowledged in all, or for d.
func (r *run) awaitAcks(ctx context.Context, n int64, d time.Duration) {
	deadline := time.Now().Add(d)
	for r.nAcks.Load() < n && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
}

// readHeads reads each page's head seq on the (new) primary.
func (r *run) readHeads(ctx context.Context, db *store.Store) map[string]int64 {
	out := map[string]int64{}
	for _, p := range r.pages {
		for attempt := 0; attempt < 50; attempt++ {
			log, err := db.Log(ctx, p.id, 0, 0)
			if err == nil {
				out[p.id] = lastSeq(log)
				break
			}
			sleep(ctx, 50*time.Millisecond)
		}
	}
	return out
}

// logs reads every page's log from the new primary.
func (r *run) logs(ctx context.Context, db *store.Store) (map[string][]store.Entry, error) {
	out := map[string][]store.Entry{}
	for _, p := range r.pages {
		var err error
		for attempt := 0; attempt < 100; attempt++ {
			var log []store.Entry
			if log, err = db.Log(ctx, p.id, 0, 0); err == nil {
				out[p.id] = log
				break
			}
			sleep(ctx, 100*time.Millisecond)
		}
		if err != nil {
			return nil, fmt.Errorf("failover: reading the log of page %s from the new primary: %w", p.id, err)
		}
	}
	return out, nil
}

func lastSeq(log []store.Entry) int64 {
	if len(log) == 0 {
		return 0
	}
	return log[len(log)-1].Seq
}

// watchConvergence records, for each window, the first moment after the
// promotion at which it has applied the log up to the head its page had
// at the promotion and holds no command issued before the promotion
// still pending. It ends when every window got there or ctx ends.
func (r *run) watchConvergence(ctx context.Context, promoted time.Time, heads map[string]int64) map[*writer]time.Time {
	out := map[*writer]time.Time{}
	for len(out) < len(r.writers) && ctx.Err() == nil {
		for _, w := range r.writers {
			if _, ok := out[w]; !ok && w.caughtUp(heads[w.page.id], promoted) {
				out[w] = time.Now()
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Millisecond):
		}
	}
	return out
}

// settle waits, until by, for every window to be at its page's final head
// with nothing pending; it reports which are.
func (r *run) settle(by time.Time, final map[string][]store.Entry) map[*writer]bool {
	out := map[*writer]bool{}
	for {
		for _, w := range r.writers {
			if !out[w] && w.settled(lastSeq(final[w.page.id])) {
				out[w] = true
			}
		}
		if len(out) == len(r.writers) || time.Now().After(by) {
			return out
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (r *run) closeWindows() {
	for _, w := range r.writers {
		w.close()
	}
}

// ---- what the writers report ----

// attempt records one kb.command call.
func (r *run) attempt(from, to time.Time, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attempts++
	r.answered = append(r.answered, span{from, to})
	if err != nil {
		r.failed = append(r.failed, span{from, to})
		r.lastFail = to
	}
}

// acked records a command issued at issued and answered committed at seq
// at at.
func (r *run) acked(id, page string, seq int64, dup bool, issued, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if dup {
		r.dupAnswers++
	}
	if _, ok := r.acks[id]; !ok {
		r.acks[id] = ack{page: page, seq: seq, at: at}
		r.nAcks.Add(1)
	}
	r.ackTimes = append(r.ackTimes, at)
	r.slowest = max(r.slowest, at.Sub(issued))
	if r.ackSeqs[id] == nil {
		r.ackSeqs[id] = map[int64]bool{}
	}
	r.ackSeqs[id][seq] = true
	r.sawLocked(slot{page, seq}, id)
}

// saw records that a client was told (page, seq) holds id.
func (r *run) saw(page string, seq int64, id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sawLocked(slot{page, seq}, id)
}

func (r *run) sawLocked(s slot, id string) {
	if prev, ok := r.seen[s]; !ok {
		r.seen[s] = id
	} else if prev != id {
		r.reused[s] = true
	}
}

func (r *run) rejectedCmd(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rejected = append(r.rejected, what)
}

func (r *run) refusedCmd(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refused = append(r.refused, what)
}

// longestGap is the longest time from to without a committed answer
// (from any writer): between two consecutive answers, from from to the
// first, or from the last to to.
func longestGap(times []time.Time, from, to time.Time) time.Duration {
	points := []time.Time{from, to}
	for _, t := range times {
		if t.After(from) && t.Before(to) {
			points = append(points, t)
		}
	}
	sort.Slice(points, func(i, j int) bool { return points[i].Before(points[j]) })
	var gap time.Duration
	for i := 1; i < len(points); i++ {
		gap = max(gap, points[i].Sub(points[i-1]))
	}
	return gap
}

// outage is the time during which writes failed: the union of the spans
// of the attempts that were not decided.
func outage(spans []span) time.Duration {
	sort.Slice(spans, func(i, j int) bool { return spans[i].from.Before(spans[j].from) })
	var total time.Duration
	var cur span
	for i, s := range spans {
		switch {
		case i == 0:
			cur = s
		case !s.from.After(cur.to):
			if s.to.After(cur.to) {
				cur.to = s.to
			}
		default:
			total += cur.to.Sub(cur.from)
			cur = s
		}
	}
	if len(spans) > 0 {
		total += cur.to.Sub(cur.from)
	}
	return total
}

// sleep waits d, or until ctx ends.
var sleep = client.Sleep
