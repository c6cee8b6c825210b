package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/subspace/kbkit/kbcore"
)

// Group commit (DESIGN.md §9): commands for one page are decided one page
// transaction at a time anyway (the page lock), so while one runs, the
// commands that arrive for the same page queue up, and the next transaction
// decides all of them (up to groupMax) in order, in two round trips and one
// WAL flush: BEGIN + the page lock + the dedup reads of every id + the page
// head, then each command planned against the document the previous ones
// left, each with its own seq, log row, outbox row and notification, and
// COMMIT. The page's node rows (with their index rows) and its seq are
// written once, in their final state.
//
// After a group, the drainer waits a moment (at most groupWait, and at most
// half the group's own time) for its callers to queue their next commands,
// so that a closed loop of writers keeps forming full groups instead of
// alternating between a lone command and a group of the others.
//
// A group transaction takes only commands whose plan stays on the page and
// leaves titles and aliases alone (keystrokes, structure edits); the first
// command that needs more (create-page, rename, merge, a ref that creates a
// page) ends the group: the commands before it commit, it is decided alone
// with the lock set it needs, and the rest queue again at the front.
//
// If a group transaction fails in any way, its commands are decided again
// one by one, in the same order, by the single-command path (with its
// retries): batching never changes an outcome.
//
// In-process, one page has at most one command transaction running: the
// first Submit for an idle page runs alone in its own goroutine; the ones
// that arrive meanwhile queue, and a drainer goroutine decides the queue in
// groups until it is empty. A waiter whose context ends leaves the queue
// (or stops waiting); the group transaction runs on its own context, so
// one caller's cancellation never breaks the others' commands.

// defaultGroupMax is the most commands one group transaction decides.
const defaultGroupMax = 64

// defaultGroupWait is the longest a drainer waits for the callers of its
// last group to send again (about the p99 of that delay on a loaded
// two-core machine; the median is under 100µs).
const defaultGroupWait = 500 * time.Microsecond

// groupTimeout bounds one group transaction (it runs on no caller's
// context). A timeout is a failure: the commands are decided alone.
var groupTimeout = 30 * time.Second

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
}

type groupStats struct {
	batches, batched, failures atomic.Int64
}

// Stats returns the group commit counters.
func (s *Store) Stats() Stats {
	return Stats{
		Batches:         s.stats.batches.Load(),
		BatchedCommands: s.stats.batched.Load(),
		BatchFailures:   s.stats.failures.Load(),
	}
}

// pageQueue is the queue of one page with a command transaction running
// (its presence in Store.groups.queues means busy).
type pageQueue struct {
	reqs []*request
	wake chan struct{} // a request was queued (capacity 1)
}

// request is one queued Submit.
type request struct {
	ctx  context.Context
	dev  Device
	env  kbcore.Envelope
	out  Outcome
	err  error
	done chan struct{} // closed once out and err are set
}

func (r *request) answer(out Outcome, err error) {
	r.out, r.err = out, err
	close(r.done)
}

// groups holds the page queues.
type groups struct {
	mu     sync.Mutex
	queues map[string]*pageQueue
}

func (s *Store) submitGrouped(ctx context.Context, dev Device, env kbcore.Envelope) (Outcome, error) {
	page := env.PageID
	s.groups.mu.Lock()
	if s.groups.queues == nil {
		s.groups.queues = map[string]*pageQueue{}
	}
	q := s.groups.queues[page]
	if q == nil {
		// The page is idle: decide alone, in this goroutine.
		q = &pageQueue{wake: make(chan struct{}, 1)}
		s.groups.queues[page] = q
		s.groups.mu.Unlock()
		out, err := s.submitAlone(ctx, dev, env, nil, false)
		s.idle(page, q)
		return out, err
	}
	r := &request{ctx: ctx, dev: dev, env: env, done: make(chan struct{})}
	q.reqs = append(q.reqs, r)
	s.groups.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}

	select {
	case <-r.done:
		return r.out, r.err
	case <-ctx.Done():
		s.groups.mu.Lock()
		for i, x := range q.reqs {
			if x == r {
				q.reqs = append(q.reqs[:i:i], q.reqs[i+1:]...)
				break
			}
		}
		s.groups.mu.Unlock()
		// Not decided yet, or decided by a transaction still running: the
		// caller retries with the same id and gets the decision.
		return Outcome{}, classify(ctx.Err())
	}
}

// idle is called when a page's transaction ends: the page becomes idle, or
// a drainer decides what queued meanwhile.
func (s *Store) idle(page string, q *pageQueue) {
	s.groups.mu.Lock()
	defer s.groups.mu.Unlock()
	if len(q.reqs) == 0 {
		delete(s.groups.queues, page)
		return
	}
	go s.drain(page, q)
}

// drain decides a page's queue in groups until it is empty.
func (s *Store) drain(page string, q *pageQueue) {
	expect, took := 0, time.Duration(0)
	for {
		if expect > 1 {
			// Waiting costs at most half the last group's time.
			s.gather(q, expect, min(s.groupWait, took/2))
		}
		s.groups.mu.Lock()
		// Waiters that gave up are not decided.
		live := q.reqs[:0]
		for _, r := range q.reqs {
			if r.ctx.Err() == nil {
				live = append(live, r)
			} else {
				r.answer(Outcome{}, classify(r.ctx.Err()))
			}
		}
		clear(q.reqs[len(live):])
		q.reqs = live
		if len(q.reqs) == 0 {
			delete(s.groups.queues, page)
			s.groups.mu.Unlock()
			return
		}
		n := min(len(q.reqs), s.groupMax)
		reqs := append([]*request(nil), q.reqs[:n]...)
		q.reqs = append(q.reqs[:0:0], q.reqs[n:]...)
		s.groups.mu.Unlock()

		start := time.Now()
		rest := s.round(reqs)
		expect, took = len(reqs)-len(rest), time.Since(start)
		if len(rest) > 0 {
			s.groups.mu.Lock()
			q.reqs = append(rest, q.reqs...)
			s.groups.mu.Unlock()
		}
	}
}

// gather waits, at most wait, until expect commands are queued: the
// callers just answered are likely to send their next command at once, and
// a group that waits for them saves a transaction.
func (s *Store) gather(q *pageQueue, expect int, wait time.Duration) {
	if wait <= 0 {
		return
	}
	var timer *time.Timer
	for {
		s.groups.mu.Lock()
		n := len(q.reqs)
		s.groups.mu.Unlock()
		if n >= expect {
			break
		}
		if timer == nil {
			timer = time.NewTimer(wait)
		}
		select {
		case <-q.wake:
			continue
		case <-timer.C:
		}
		break
	}
	if timer != nil {
		timer.Stop()
	}
}

// alone decides r by the single-command path.
func (s *Store) alone(r *request, locks []string, names bool) {
	r.answer(s.submitAlone(r.ctx, r.dev, r.env, locks, names))
}

// round decides the first commands of reqs and returns those left to queue
// again.
func (s *Store) round(reqs []*request) []*request {
	if len(reqs) == 1 {
		s.alone(reqs[0], nil, false)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
	g, err := s.groupOnce(ctx, reqs)
	cancel()
	if err != nil {
		// Decide each alone, in order: the same outcomes as without batching.
		s.stats.failures.Add(1)
		for _, r := range reqs {
			s.alone(r, nil, false)
		}
		return nil
	}
	if g.n >= 2 {
		s.stats.batches.Add(1)
		s.stats.batched.Add(int64(g.n))
	}
	for i, r := range reqs[:g.n] {
		r.answer(g.outs[i], g.errs[i])
	}
	if g.n == len(reqs) {
		return nil
	}
	// reqs[g.n] needs more than the page lock.
	s.alone(reqs[g.n], g.locks, true)
	return reqs[g.n+1:]
}

// groupResult is what a committed group transaction decided: the first n
// commands, with their outcomes or errors; when n < len(reqs), locks is the
// lock set command n needs.
type groupResult struct {
	n     int
	outs  []Outcome
	errs  []error
	locks []string
}

// errGroupHook is the error of a group transaction failed by the test hook.
var errGroupHook = errors.New("store: group transaction failed by test hook")

// groupOnce runs one group transaction for reqs (all for one page, at
// least one). An error means nothing was decided.
func (s *Store) groupOnce(ctx context.Context, reqs []*request) (g groupResult, err error) {
	page := reqs[0].env.PageID
	t, err := s.acquire(ctx)
	if err != nil {
		return g, err
	}
	defer t.end()

	keys := make([]logKey, len(reqs))
	for i, r := range reqs {
		keys[i] = logKey{r.dev.WorkspaceID, r.env.ID}
	}
	kb := &txKB{ctx: ctx, s: s, q: t.c}
	decided, err := t.open(kb, "", []string{page}, keys)
	if err != nil {
		return g, err
	}
	h := kb.heads[page]
	kb.ws = h.ws

	b := &pgx.Batch{}
	gw := &groupWrites{page: page, dirty: map[string]bool{}}
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
		plan := kbcore.PlanCommand(kb, h.ws, env)
		if kb.err != nil {
			return g, classify(kb.err)
		}
		if plan.Rejected != nil {
			queueRejected(b, r.dev, env, plan.Rejected)
			decided[key] = decision{out: Outcome{Rejected: plan.Rejected, Duplicate: true}, page: page, device: r.dev.DeviceID}
			decide(Outcome{Rejected: plan.Rejected}, nil)
			continue
		}
		if changesNames(plan) || len(plan.Locks) != 1 || plan.Locks[0] != page {
			g.locks = union([]string{page}, plan.Locks)
			break
		}
		w := writer{ws: h.ws, device: r.dev.DeviceID, kb: kb, plan: plan, batch: b, group: gw}
		seqs, docs, err := w.effects()
		if err != nil {
			return g, err
		}
		entries = append(entries, w.entries...)
		if kb.docs == nil {
			kb.docs = map[string]kbcore.Doc{}
		}
		kb.docs[page] = docs[page]
		kb.heads[page] = head{ws: h.ws, seq: seqs[page], ok: true}
		decided[key] = decision{out: Outcome{Seq: w.originSeq, Duplicate: true}, page: page, device: r.dev.DeviceID}
		decide(Outcome{Seq: w.originSeq}, nil)
	}
	if b.Len() == 0 {
		return g, nil // nothing to write (t.end rolls back)
	}
	w := writer{ws: h.ws, kb: kb, batch: b}
	gw.flush(&w)
	if kb.err != nil { // flush resolves link targets
		return g, classify(kb.err)
	}
	if s.groupHook != nil {
		if err := s.groupHook(g.n, b); err != nil {
			return g, fmt.Errorf("%w: %v", errGroupHook, err)
		}
	}
	if err := t.commit(b); err != nil {
		return g, uniqueAsRetry(err)
	}
	if gw.seq != 0 {
		s.remember(page, gw.seq, gw.doc)
	}
	s.committed(entries)
	return g, nil
}
