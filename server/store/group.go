package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/subspace/kbkit/kbcore"
)

// Group commit (its counters: spec/PROTOCOL.md section 9): commands are
// decided in few transactions, one at a time per page (the page lock), so
// while transactions run, the commands that
// arrive queue up, and the next transaction decides many of them (up to
// groupMax, of any pages) in arrival order, in two round trips and one WAL
// flush: BEGIN + the locks of every page of the group (in page-id order,
// as every transaction takes them, in one statement) + the dedup reads of
// every id + the page heads (one statement each), then each command
// planned against the document the previous ones of its page left, each
// with its own seq and log row, and the writes (rows.go: the same handful
// of multi-row statements for any group) and COMMIT. Each page's node rows
// (with their index rows), its seq and its notification are written once,
// in their final state.
//
// At most groupTx transactions of this Store run at once (default one): a command whose
// page is idle runs alone at once while fewer run; the others queue, and a
// transaction that ends starts the next group from the queue (the oldest
// command and every later one whose page is not held by a running
// transaction). After a group, its goroutine waits a moment (at most
// groupWait, and no longer once groupMax commands are queued) for its
// callers to queue their next commands, so that a closed loop of writers
// keeps forming full groups instead of splitting into cohorts that
// alternate (a lone command, then the others). A group of one waits too,
// for one arrival. Commands queued meanwhile wait with it, at most
// groupWait: the latency an open load (whose callers do not come back)
// may pay.
//
// A group transaction takes only commands whose plan stays on their page
// and leaves titles and aliases alone (keystrokes, structure edits); the
// first command that needs more (create-page, rename, merge, a ref that
// creates a page) ends the group: the commands before it commit, it is
// decided alone with the lock set it needs, and the rest queue again at
// the front.
//
// If a group transaction fails in any way, its commands are decided again
// one by one, in the same order, by the single-command path (with its
// retries): batching never changes an outcome.
//
// A waiter whose context ends leaves the queue (or stops waiting); the
// group transaction runs on its own context, so one caller's cancellation
// never breaks the others' commands.

// defaultGroupMax is the most commands one group transaction decides.
const defaultGroupMax = 64

// defaultGroupTx is the most command transactions one Store runs at once.
// One: what queues meanwhile makes the next group, so the transactions
// (and their BEGIN, COMMIT, locks and WAL flushes) per command fall as the
// load grows; a second transaction at once would split the queue into
// smaller groups. BenchmarkManyPages reports the transactions per command
// and the commands/s at 1, 2 and 4.
const defaultGroupTx = 1

// defaultGroupWait is the longest a group's goroutine waits for the
// callers of its group to send again, whatever the group's own time. It
// bounds one round trip, not work: an answer's way back to a caller (over
// HTTP, in another process, on cores shared with PostgreSQL) and the
// caller's next command, so that the callers of a closed loop join the
// same group instead of splitting into cohorts that alternate; and it is
// small next to a command's latency. The wait ends as soon as every
// caller is back, so a closed loop rarely waits long; in an open one
// (callers that do not come back) a command queued behind a group may
// wait this long for it. The loads that chose it are in
// loadgen/results/2026-12-03-the-group-window.json.
const defaultGroupWait = 2 * time.Millisecond

// groupTimeout bounds one group transaction (it runs on no caller's
// context). A timeout is a failure: the commands are decided alone.
var groupTimeout = 30 * time.Second

// SetTxTimeout bounds each transaction the Store runs on no caller's
// context (a group's) by d instead of 30 s; the server sets its DBTimeout
// here, so that a partition from Postgres fails a group within it.
func (s *Store) SetTxTimeout(d time.Duration) {
	if d > 0 {
		s.txTimeout.Store(int64(d))
	}
}

func (s *Store) groupDeadline() time.Duration {
	if d := s.txTimeout.Load(); d > 0 {
		return time.Duration(d)
	}
	return groupTimeout
}

// Stats counts group commit activity since Open.
type Stats struct {
	// Batches is the number of group transactions that decided two or
	// more commands.
	Batches int64 `json:"batches"`
	// BatchedCommands is the number of commands those decided.
	BatchedCommands int64 `json:"batched_commands"`
	// BatchFailures is the number of group transactions that failed; their
	// commands were decided alone.
	BatchFailures int64 `json:"batch_failures"`
	// MultiPageBatches is the number of those batches that decided
	// commands of two or more pages.
	MultiPageBatches int64 `json:"multi_page_batches"`
	// OptimisticConflicts is the number of optimistic group transactions
	// (one round trip, against the cached page heads) that rolled back and
	// were decided again the usual way.
	OptimisticConflicts int64 `json:"optimistic_conflicts"`
}

type groupStats struct {
	batches, batched, failures, multiPage, optimisticConflicts atomic.Int64
}

// Stats returns the group commit counters.
func (s *Store) Stats() Stats {
	return Stats{
		Batches:             s.stats.batches.Load(),
		BatchedCommands:     s.stats.batched.Load(),
		BatchFailures:       s.stats.failures.Load(),
		MultiPageBatches:    s.stats.multiPage.Load(),
		OptimisticConflicts: s.stats.optimisticConflicts.Load(),
	}
}

// request is one queued Submit.
type request struct {
	// queued is when it last joined the queue (waits.go).
	queued time.Time
	ctx    context.Context
	dev    Device
	env    kbcore.Envelope
	out    Outcome
	err    error
	done   chan struct{} // closed once out and err are set
}

func (r *request) answer(out Outcome, err error) {
	r.out, r.err = out, err
	close(r.done)
}

// groups is the scheduler of command transactions. Invariant, under mu:
// when running < groupTx, the page of every queued request is busy (every
// request that could start has started).
type groups struct {
	mu      sync.Mutex
	busy    map[string]bool // pages held by a running transaction of this Store
	queue   []*request      // waiting, in arrival order
	running int
	// wake (capacity 1) tells the gathering group's goroutine that what
	// it waits for came: arrivals reached expect, or groupMax commands
	// are queued. Only then, so that a closed loop's callers do not wake
	// it once each (a goroutine handoff per command) to find the group
	// not yet complete.
	wake chan struct{}
	// arrivals counts the requests ever queued (gather); expect is the
	// count the gathering goroutine waits for (0: none is gathering);
	// woken counts the gathering goroutine's wakes by wake.
	arrivals, expect, woken int64
}

func (s *Store) submitGrouped(ctx context.Context, dev Device, env kbcore.Envelope) (Outcome, error) {
	page := env.PageID
	g := &s.groups
	g.mu.Lock()
	if g.busy == nil {
		g.busy = map[string]bool{}
		g.wake = make(chan struct{}, 1)
	}
	if !g.busy[page] && g.running < s.groupTx {
		// Idle page and a free slot (so nothing of the page is queued):
		// decide alone, in this goroutine.
		g.busy[page] = true
		g.running++
		g.mu.Unlock()
		r := &request{ctx: ctx, dev: dev, env: env, done: make(chan struct{})}
		start := time.Now()
		rest, _ := s.round([]*request{r}, false)
		s.waits.holdNanos.Add(int64(time.Since(start)))
		s.finish([]string{page}, rest, false)
		return r.out, r.err
	}
	r := &request{ctx: ctx, dev: dev, env: env, done: make(chan struct{}), queued: time.Now()}
	g.queue = append(g.queue, r)
	g.arrivals++
	signal := g.expect > 0 && (g.arrivals >= g.expect || len(g.queue) >= s.groupMax)
	g.mu.Unlock()
	if signal {
		select {
		case g.wake <- struct{}{}:
		default:
		}
	}

	select {
	case <-r.done:
		return r.out, r.err
	case <-ctx.Done():
		g.mu.Lock()
		for i, x := range g.queue {
			if x == r {
				g.queue = append(g.queue[:i:i], g.queue[i+1:]...)
				break
			}
		}
		g.mu.Unlock()
		// Not decided yet, or decided by a transaction still running: the
		// caller retries with the same id and gets the decision.
		return Outcome{}, classify(ctx.Err())
	}
}

// finish ends a transaction that held pages: they become idle, rest (the
// commands it left undecided) queue again at the front, and the next
// groups start; it reports whether one did. With keep, the first group
// started is returned instead of handed to a task: the calling group's
// goroutine runs it, without a handoff to another goroutine.
func (s *Store) finish(pages []string, rest []*request, keep bool) (next *groupRun, started bool) {
	g := &s.groups
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range pages {
		delete(g.busy, p)
	}
	if len(rest) > 0 {
		now := time.Now()
		for _, r := range rest {
			r.queued = now
		}
		g.queue = append(rest, g.queue...)
	}
	g.running--
	return s.scheduleLocked(keep)
}

// groupRun is a group scheduleLocked started: its pages, held for it, and
// its commands.
type groupRun struct {
	pages []string
	reqs  []*request
}

// scheduleLocked starts groups while a slot is free and a queued command
// can run: the oldest whose page is idle, with every later one whose page
// is idle or in the group (up to groupMax), in arrival order. With keep,
// the first is returned for the caller to run (finish).
func (s *Store) scheduleLocked(keep bool) (next *groupRun, started bool) {
	g := &s.groups
	for g.running < s.groupTx && len(g.queue) > 0 {
		// Waiters that gave up are not decided.
		live := g.queue[:0]
		for _, r := range g.queue {
			if r.ctx.Err() == nil {
				live = append(live, r)
			} else {
				r.answer(Outcome{}, classify(r.ctx.Err()))
			}
		}
		clear(g.queue[len(live):])
		g.queue = live

		var reqs, left []*request
		mine := map[string]bool{}
		for _, r := range g.queue {
			p := r.env.PageID
			if len(reqs) < s.groupMax && (mine[p] || !g.busy[p]) {
				if !mine[p] {
					mine[p] = true
					g.busy[p] = true
				}
				reqs = append(reqs, r)
			} else {
				left = append(left, r)
			}
		}
		if len(reqs) == 0 {
			return next, started
		}
		now := time.Now()
		for _, r := range reqs {
			if !r.queued.IsZero() {
				s.waits.queued.Add(1)
				s.waits.queueNanos.Add(int64(now.Sub(r.queued)))
			}
		}
		g.queue = left
		g.running++
		pages := make([]string, 0, len(mine))
		for p := range mine {
			pages = append(pages, p)
		}
		started = true
		if keep && next == nil {
			next = &groupRun{pages, reqs}
			continue
		}
		s.tasks.Go(func() { s.runGroup(pages, reqs) })
	}
	return next, started
}

// runGroup decides reqs (their pages held for it), waits for the callers
// of a group to send again, and goes on with the next group it starts,
// until none starts.
func (s *Store) runGroup(pages []string, reqs []*request) {
	for {
		start := time.Now()
		rest, arrived := s.round(reqs, true)
		if n := len(reqs) - len(rest); n > 0 {
			g0 := time.Now()
			s.gather(arrived+int64(n), s.groupWait)
			s.waits.gatherNanos.Add(int64(time.Since(g0)))
		}
		s.waits.holdNanos.Add(int64(time.Since(start)))
		next, started := s.finish(pages, rest, true)
		if !started {
			s.runLate() // no group follows to run them
			return
		}
		if next == nil {
			return
		}
		pages, reqs = next.pages, next.reqs
	}
}

// gather waits, at most wait, until the arrivals count reaches expect:
// the callers just answered are likely to send their next command at
// once, and a group that waits for them saves a transaction. It waits for
// them, not for a queue length: while a group runs, the other writers of
// its page queue, and a group that took only those would leave the
// writers in two halves that alternate, each group half the size it
// could be (and twice the transactions and WAL flushes).
func (s *Store) gather(expect int64, wait time.Duration) {
	if wait <= 0 {
		return
	}
	g := &s.groups
	var timer *time.Timer
	select {
	case <-g.wake: // a signal sent after the last gather ended
	default:
	}
	defer func() {
		g.mu.Lock()
		g.expect = 0
		g.mu.Unlock()
	}()
	for {
		g.mu.Lock()
		n, queued := g.arrivals, len(g.queue)
		g.expect = expect
		g.mu.Unlock()
		if n >= expect || queued >= s.groupMax {
			break
		}
		if timer == nil {
			timer = time.NewTimer(wait)
		}
		select {
		case <-g.wake:
			g.mu.Lock()
			g.woken++
			g.mu.Unlock()
			continue
		case <-timer.C:
		}
		break
	}
	if timer != nil {
		timer.Stop()
	}
}

// alone decides r by the single-command path; doubt says a group
// transaction that may have committed r came first.
func (s *Store) alone(r *request, locks []string, names, doubt bool) {
	r.answer(s.submitAlone(r.ctx, r.dev, r.env, locks, names, doubt))
}

// round decides the first commands of reqs and returns those left to queue
// again, and the arrivals count (groups.arrivals) just before the callers
// were answered. late defers the hooks of what the group transaction
// committed until the next transaction is sent (deferHooks, runLate).
func (s *Store) round(reqs []*request, late bool) (rest []*request, arrived int64) {
	arrived = -1
	ctx, cancel := context.WithTimeout(context.Background(), s.groupDeadline())
	defer cancel()
	if len(reqs) == 1 {
		if _, ok := s.cachedHeads([]string{reqs[0].env.PageID}); !ok {
			s.runLate()
			s.alone(reqs[0], nil, false, false)
			return nil, arrived
		}
	}
	g, err := s.groupOnce(ctx, reqs, true)
	var opt errOptimistic
	if errors.As(err, &opt) {
		s.stats.optimisticConflicts.Add(1)
		g, err = s.groupOnce(ctx, reqs, false)
	}
	cancel()
	// The hooks left by the group before, if this round sent nothing
	// that ran them (a group that failed before its first send).
	s.runLate()
	if err != nil {
		// Decide each alone, in order: the same outcomes as without batching.
		s.stats.failures.Add(1)
		doubt := inDoubt(err)
		for _, r := range reqs {
			s.alone(r, nil, false, doubt)
		}
		return nil, arrived
	}
	if g.n >= 2 {
		s.stats.batches.Add(1)
		s.stats.batched.Add(int64(g.n))
		if g.pages >= 2 {
			s.stats.multiPage.Add(1)
		}
	}
	s.groups.mu.Lock()
	arrived = s.groups.arrivals
	s.groups.mu.Unlock()
	for i, r := range reqs[:g.n] {
		r.answer(g.outs[i], g.errs[i])
	}
	if late && g.n == len(reqs) {
		// The hooks (the hub's delivery to local subscribers: the
		// echoes) wait for the next transaction to be sent. The callers
		// just answered send their next commands meanwhile (the critical
		// path of a closed loop, which the group gathers), and the
		// echoes' socket writes, and the clients' reading of them, no
		// longer take the two cores from them: they run while
		// PostgreSQL works on the next group. The next group's start
		// runs them (runLate, after its first send), or the end of this
		// one when no group follows (runGroup); a page's commits reach
		// the hooks in seq order either way (committed runs the late
		// ones first). loadgen/README, "How the reference server spends
		// a command".
		s.deferHooks(g.entries)
		return nil, arrived
	}
	s.committed(g.entries)
	if g.n == len(reqs) {
		return nil, arrived
	}
	// reqs[g.n] needs more than its page's lock.
	s.alone(reqs[g.n], g.locks, true, false)
	return reqs[g.n+1:], arrived
}

// groupResult is what a committed group transaction decided: the first n
// commands (of pages distinct pages), with their outcomes or errors; when
// n < len(reqs), locks is the lock set command n needs.
type groupResult struct {
	// entries are the committed commands, for the commit hooks (run
	// once the callers have their answers).
	entries []pageEntry
	n       int
	pages   int
	outs    []Outcome
	errs    []error
	locks   []string
}

// errGroupHook is the error of a group transaction failed by the test hook.
var errGroupHook = errors.New("store: group transaction failed by test hook")

// errOptimistic is the failure of an optimistic group transaction whose
// guards found a page head other than the cached one, or an id decided
// before: nothing was written, and the group is decided again from the
// database's heads and outcomes.
type errOptimistic struct{ err error }

func (e errOptimistic) Error() string { return "store: optimistic group: " + e.err.Error() }
func (e errOptimistic) Unwrap() error { return e.err }

// groupOnce runs one group transaction for reqs (at least one, of any
// pages and workspaces). An error means nothing was decided.
//
// Optimistic, when every page's head is in the document cache: the
// commands are planned against the cached heads and documents before the
// transaction, and BEGIN, the page locks, the writes (the update of the
// page seqs checking that every head is still the cached one:
// sqlPageSeqsGuarded) and COMMIT go in one round trip instead of two. A
// command id decided before fails the log insert (its primary key);
// either failure, or any other ERROR, rolls everything back
// (errOptimistic) and the caller decides the group the usual way. In one
// instance the cache holds the heads of every page it wrote.
func (s *Store) groupOnce(ctx context.Context, reqs []*request, optimistic bool) (g groupResult, err error) {
	t, err := s.acquire(ctx)
	if err != nil {
		return g, err
	}
	defer t.end()
	t.sent = s.runLate // the group before's hooks (round)
	defer func() {
		path, n := PathUsual, 0
		if optimistic {
			path = PathOptimistic
		}
		if err == nil {
			n = g.n
		}
		s.waits.transaction(path, n, time.Since(t.start)-t.aside, t.pg)
	}()

	keys := make([]logKey, len(reqs))
	var pages []string
	for i, r := range reqs {
		keys[i] = logKey{r.dev.WorkspaceID, r.env.ID}
		pages = append(pages, r.env.PageID)
	}
	pages = union(pages, nil)
	// One view per workspace, sharing the transaction's page heads and
	// changed documents.
	first := &txKB{ctx: ctx, s: s, q: t.c}
	b := &pgx.Batch{}
	var decided map[logKey]decision
	var heads map[string]head
	if optimistic {
		heads, optimistic = s.cachedHeads(pages)
	}
	if optimistic {
		first.heads, decided = heads, map[logKey]decision{}
		b.Queue(sqlBegin)
		b.Queue(sqlLockPages, textArray(pages))
	} else if decided, err = t.open(first, "", pages, keys); err != nil {
		return g, err
	}
	first.docs = map[string]kbcore.Doc{}
	kbs := map[string]*txKB{}
	kbFor := func(ws string) *txKB {
		kb := kbs[ws]
		if kb == nil {
			kb = &txKB{ctx: ctx, s: s, q: t.c, ws: ws, heads: first.heads, docs: first.docs}
			kbs[ws] = kb
		}
		return kb
	}
	kbErr := func() error {
		for _, kb := range kbs {
			if kb.err != nil {
				return kb.err
			}
		}
		return nil
	}

	rows := newTxWrites()
	if optimistic {
		// The writes check the heads (sqlPageSeqsGuarded); copied, as
		// planning moves first.heads on.
		rows.guard = make(map[string]head, len(pages))
		for _, p := range pages {
			rows.guard[p] = heads[p]
		}
	}
	var entries []pageEntry
	g.outs = make([]Outcome, 0, len(reqs))
	g.errs = make([]error, 0, len(reqs))
	decide := func(o Outcome, err error) {
		g.outs = append(g.outs, o)
		g.errs = append(g.errs, err)
		g.n++
	}
	for _, r := range reqs {
		env := r.env
		page := env.PageID
		h := first.heads[page]
		// Dedup: decided before, or earlier in this group.
		key := logKey{r.dev.WorkspaceID, env.ID}
		if d, ok := decided[key]; ok {
			decide(d.answer(r.dev, env), nil)
			continue
		}
		if !h.ok {
			if env.Type == kbcore.TypeCreatePage {
				g.locks = []string{page}
				break
			}
			decide(Outcome{}, ErrNotFound)
			continue
		}
		if h.ws != r.dev.WorkspaceID {
			decide(Outcome{}, ErrForbidden)
			continue
		}
		kb := kbFor(h.ws)
		plan := kbcore.PlanCommand(kb, h.ws, env)
		if kb.err != nil {
			return g, classify(kb.err)
		}
		if plan.Rejected != nil {
			rows.rejected(r.dev, env, plan.Rejected)
			decided[key] = decision{out: Outcome{Rejected: plan.Rejected, Duplicate: true}, page: page, device: r.dev.DeviceID}
			decide(Outcome{Rejected: plan.Rejected}, nil)
			continue
		}
		if changesNames(plan) || len(plan.Locks) != 1 || plan.Locks[0] != page {
			g.locks = union([]string{page}, plan.Locks)
			break
		}
		w := writer{ws: h.ws, device: r.dev.DeviceID, kb: kb, plan: plan, batch: b, rows: rows}
		if err := w.effects(); err != nil {
			return g, err
		}
		entries = append(entries, w.entries...)
		pw := rows.pages[page]
		first.docs[page] = pw.doc
		first.heads[page] = head{ws: h.ws, seq: pw.seq, ok: true}
		decided[key] = decision{out: Outcome{Seq: w.originSeq, Duplicate: true}, page: page, device: r.dev.DeviceID}
		decide(Outcome{Seq: w.originSeq}, nil) // logged once the transaction's entries are all known
	}
	if len(rows.log.id) == 0 && len(rows.rej.id) == 0 {
		return g, nil // nothing to write (t.end rolls back)
	}
	touched := map[string]bool{}
	for _, r := range reqs[:g.n] {
		touched[r.env.PageID] = true
	}
	g.pages = len(touched)
	rows.flush(b, kbFor)
	if err := kbErr(); err != nil { // flush resolves link targets
		return g, classify(err)
	}
	if s.groupHook != nil {
		if err := s.groupHook(g.n, b); err != nil {
			return g, fmt.Errorf("%w: %v", errGroupHook, err)
		}
	}
	if err := t.commit(b); err != nil {
		// An ERROR (the transaction rolled back, nothing was written) of
		// an optimistic transaction, the guard's or any other, sends the
		// group down the usual path, which decides it from the database
		// (and meets any real error again).
		var pg *pgconn.PgError
		if optimistic && errors.As(err, &pg) && (pg.SeverityUnlocalized == "ERROR" || pg.SeverityUnlocalized == "" && pg.Severity == "ERROR") {
			return g, errOptimistic{err}
		}
		return g, commitFailed(err, uniqueAsRetry(err))
	}
	rows.remember(s)
	g.entries = entries
	// Every command this transaction committed carries its whole log, not
	// only what precedes its own entries: a socket that subscribes to the
	// page gets all of it with the reply (one write per socket per group,
	// server/ws_echo.go).
	logged := newTxLog(entries)
	for i := range g.outs {
		if o := &g.outs[i]; o.Seq > 0 && !o.Duplicate {
			o.logged = logged
		}
	}
	return g, nil
}
