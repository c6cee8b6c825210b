package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/subspace/kbkit/kbcore"
)

// maxAttempts bounds how often Submit retries a transaction that failed
// transiently before it reports ErrRetryable to the caller.
const maxAttempts = 4

// errRelock asks for another attempt holding more locks.
type errRelock struct{ locks []string }

func (e errRelock) Error() string { return "store: plan needs more locks" }

// Submit decides one command: take the page locks (in page-id order),
// deduplicate its id, plan it, apply every effect, write the changed rows,
// the index rows and the log, NOTIFY NotifyChannel, commit. A rejection is
// logged too (without seq) so that a retry of the id gets the same answer.
// The envelope must already be validated against the schema and its
// device_id checked against dev.
//
// Commands that queue up while transactions run share one transaction
// (group commit, see group.go): a group may hold commands of several
// pages, each still with its own seq, log row and outcome; if that
// transaction fails, each of them is decided alone, so batching never
// changes an outcome.
//
// An error means the command was not decided (ErrRetryable: retry with the
// same id) or is not allowed (ErrNotFound, ErrForbidden); a decision is
// always an Outcome.
func (s *Store) Submit(ctx context.Context, dev Device, env kbcore.Envelope) (Outcome, error) {
	if err := ctx.Err(); err != nil {
		return Outcome{}, classify(err)
	}
	if s.groupMax <= 1 {
		return s.submitAlone(ctx, dev, env, nil, false, false)
	}
	return s.submitGrouped(ctx, dev, env)
}

// submitAlone decides one command in its own transaction, retrying
// transient failures. locks and names, when given, are the lock set to
// start from (a hint: the plan is checked against the locks held).
// doubt says a transaction of this call whose COMMIT got no answer may
// have committed the command (a group transaction, see round).
//
// After a COMMIT that got no answer (the connection broke, the primary
// was lost), the next attempt may find the id decided: by this call's own
// transaction, which did commit. That is the command's first outcome, not
// a retry's, so it is answered without Duplicate.
func (s *Store) submitAlone(ctx context.Context, dev Device, env kbcore.Envelope, locks []string, names, doubt bool) (Outcome, error) {
	if len(locks) == 0 {
		locks = []string{env.PageID}
	}
	var lastErr error
	for attempt := 0; attempt < maxAttempts; attempt++ {
		out, err := s.submitOnce(ctx, dev, env, locks, names)
		var relock errRelock
		switch {
		case err == nil:
			if doubt && out.Duplicate {
				out.Duplicate = false
			}
			return out, nil
		case errors.As(err, &relock):
			locks, names = relock.locks, true
			attempt-- // growing the lock set is progress, not a failure
			if len(locks) > 1000 {
				return Outcome{}, fmt.Errorf("store: plan touches %d pages", len(locks))
			}
			continue
		case errors.Is(err, ErrNotFound), errors.Is(err, ErrForbidden):
			return Outcome{}, err
		case IsRetryable(err) && ctx.Err() == nil:
			lastErr = err
			doubt = doubt || inDoubt(err)
			time.Sleep(retryDelay << attempt)
			continue
		default:
			return Outcome{}, err
		}
	}
	return Outcome{}, lastErr
}

// submitOnce is one attempt, in two round trips when the page document is
// cached: BEGIN + locks + dedup + page heads, then writes + COMMIT.
func (s *Store) submitOnce(ctx context.Context, dev Device, env kbcore.Envelope, locks []string, names bool) (out Outcome, err error) {
	t, err := s.acquire(ctx)
	if err != nil {
		return Outcome{}, err
	}
	defer t.end()
	defer func() {
		n := 0
		if err == nil {
			n = 1
		}
		s.waits.transaction(PathAlone, n, time.Since(t.start), t.pg)
	}()

	locks = union(locks, nil) // sorted, deduplicated, a copy
	kb := &txKB{ctx: ctx, s: s, q: t.c, ws: dev.WorkspaceID}
	nameLock := ""
	if names {
		nameLock = dev.WorkspaceID
	}
	decided, err := t.open(kb, nameLock, locks, []logKey{{dev.WorkspaceID, env.ID}})
	if err != nil {
		return Outcome{}, classify(err)
	}
	// Dedup: an id decided before in the workspace gets its original
	// outcome, or id-reused.
	if d, ok := decided[logKey{dev.WorkspaceID, env.ID}]; ok {
		return d.answer(dev, env), nil
	}

	ws, _, exists, err := kb.head(env.PageID)
	if err != nil {
		return Outcome{}, classify(err)
	}
	switch {
	case exists && ws != dev.WorkspaceID:
		return Outcome{}, ErrForbidden
	case !exists && env.Type != kbcore.TypeCreatePage:
		return Outcome{}, ErrNotFound
	}

	plan := kbcore.PlanCommand(kb, dev.WorkspaceID, env)
	if kb.err != nil {
		return Outcome{}, classify(kb.err)
	}
	if plan.Rejected != nil {
		b := &pgx.Batch{}
		rows := newTxWrites()
		rows.rejected(dev, env, plan.Rejected)
		rows.flush(b, nil)
		if err := t.commit(b); err != nil {
			return Outcome{}, commitFailed(err, classify(err))
		}
		return Outcome{Rejected: plan.Rejected}, nil
	}
	if need := missingLocks(plan, locks); need != nil || (!names && changesNames(plan)) {
		return Outcome{}, errRelock{locks: union(locks, plan.Locks)}
	}

	w := writer{ws: dev.WorkspaceID, device: dev.DeviceID, kb: kb, plan: plan, batch: &pgx.Batch{}, rows: newTxWrites()}
	if err := w.effects(); err != nil {
		return Outcome{}, err
	}
	w.rows.flush(w.batch, func(string) *txKB { return kb })
	if kb.err != nil { // flush resolves link targets
		return Outcome{}, classify(kb.err)
	}
	if err := t.commit(w.batch); err != nil {
		return Outcome{}, commitFailed(err, uniqueAsRetry(err))
	}
	w.rows.remember(s)
	s.committed(w.entries)
	return Outcome{Seq: w.originSeq, logged: newTxLog(w.entries)}, nil
}

// ---- pipelined transactions ----

const (
	sqlBegin     = `BEGIN ISOLATION LEVEL READ COMMITTED`
	sqlCommit    = `COMMIT`
	sqlLockNames = `SELECT pg_advisory_xact_lock(hashtextextended($1, 1))`
	// The page locks in the order of the array (sorted by the caller):
	// a function scan yields its rows in order, and the aggregate takes
	// them one by one.
	sqlLockPages = `SELECT count(pg_advisory_xact_lock(hashtextextended(p, 0))) FROM unnest($1::text[]) AS p`
	// The outcomes of the ids already decided, and the page heads, each
	// matched to its position in the arrays. (The store's connections
	// plan without sequential scans, see Open: a generic plan cached
	// while command_log was small would stay one as it grows.)
	sqlDecided = `SELECT k.i, c.outcome, coalesce(c.seq, 0), coalesce(c.code, ''), coalesce(c.message, ''),
		c.page_id::text, coalesce(c.device_id::text, '')
		FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS k(ws, id, i)
		JOIN command_log c ON c.workspace_id = k.ws::uuid AND c.id = k.id::uuid`
	sqlHeads = `SELECT k.i, p.workspace_id::text, p.seq
		FROM unnest($1::text[]) WITH ORDINALITY AS k(id, i) JOIN pages p ON p.id = k.id::uuid`
)

// pipeTx is a READ COMMITTED transaction on one pooled connection whose
// BEGIN travels in the same pipeline as its locks and first reads, and
// whose COMMIT travels with its writes.
type pipeTx struct {
	ctx context.Context
	c   *pgxpool.Conn
	// start is when the connection was asked for; pg sums the waits for
	// Postgres (the pool, BEGIN's and COMMIT's round trips): waits.go.
	start time.Time
	pg    time.Duration
	// sent, if set, is called once, after the transaction's first
	// pipeline is written to the connection; its time (aside) is counted
	// neither as the transaction's nor as its wait for Postgres.
	sent  func()
	aside time.Duration
}

// didSend calls t.sent once, in a round trip that waited() times.
func (t *pipeTx) didSend() {
	if f := t.sent; f != nil {
		t.sent = nil
		t0 := time.Now()
		f()
		t.aside = time.Since(t0)
		t.pg -= t.aside
	}
}

func (s *Store) acquire(ctx context.Context) (*pipeTx, error) {
	start := time.Now()
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, classify(err)
	}
	return &pipeTx{ctx: ctx, c: c, start: start, pg: time.Since(start)}, nil
}

// waited adds the time since t0 to the transaction's waits for Postgres.
func (t *pipeTx) waited(t0 time.Time) { t.pg += time.Since(t0) }

// end rolls back whatever is still open and returns the connection (the
// pool drops a connection left inside a transaction).
func (t *pipeTx) end() {
	if t.c == nil {
		return
	}
	if pc := t.c.Conn().PgConn(); !pc.IsClosed() && pc.TxStatus() != 'I' {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), 5*time.Second)
		_, _ = t.c.Exec(ctx, "ROLLBACK")
		cancel()
	}
	t.c.Release()
	t.c = nil
}

// open begins the transaction and, in the same round trip, takes the locks
// (the workspace's name lock when nameLock is set, then the pages in the
// given order, which must be sorted: the same order in every transaction),
// reads the outcomes of the ids already decided (in their workspaces) and
// the heads of the locked pages (into kb).
func (t *pipeTx) open(kb *txKB, nameLock string, pages []string, keys []logKey) (map[logKey]decision, error) {
	defer t.waited(time.Now())
	keys = uniqueKeys(keys)
	kws, kid := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		kws[i], kid[i] = k.ws, k.id
	}
	b := &pgx.Batch{}
	b.Queue(sqlBegin)
	if nameLock != "" {
		b.Queue(sqlLockNames, "names:"+nameLock)
	}
	b.Queue(sqlLockPages, textArray(pages))
	b.Queue(sqlDecided, textArray(kws), textArray(kid))
	b.Queue(sqlHeads, textArray(pages))
	br := t.c.SendBatch(t.ctx, b)
	defer br.Close()
	t.didSend()
	execs := 2
	if nameLock != "" {
		execs++
	}
	for i := 0; i < execs; i++ {
		if _, err := br.Exec(); err != nil {
			return nil, err
		}
	}
	decided := map[logKey]decision{}
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var i int64
		var outcome, code, msg string
		var d decision
		if err := rows.Scan(&i, &outcome, &d.out.Seq, &code, &msg, &d.page, &d.device); err != nil {
			rows.Close()
			return nil, err
		}
		if i < 1 || int(i) > len(keys) {
			rows.Close()
			return nil, fmt.Errorf("store: dedup read returned position %d of %d", i, len(keys))
		}
		if outcome == "rejected" {
			d.out = Outcome{Rejected: &kbcore.Rejection{Code: code, Message: msg}}
		}
		d.out.Duplicate = true
		decided[keys[i-1]] = d
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	kb.heads = make(map[string]head, len(pages))
	for _, p := range pages {
		kb.heads[p] = head{}
	}
	rows, err = br.Query()
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var i int64
		var h head
		if err := rows.Scan(&i, &h.ws, &h.seq); err != nil {
			rows.Close()
			return nil, err
		}
		if i < 1 || int(i) > len(pages) {
			rows.Close()
			return nil, fmt.Errorf("store: head read returned position %d of %d", i, len(pages))
		}
		h.ok = true
		kb.heads[pages[i-1]] = h
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return decided, br.Close()
}

// logKey is the key of command_log: a command id within its workspace.
type logKey struct{ ws, id string }

func uniqueKeys(keys []logKey) []logKey {
	seen := make(map[logKey]bool, len(keys))
	out := keys[:0:0]
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// decision is a logged outcome with the page and device that sent it.
type decision struct {
	out          Outcome
	page, device string
}

// RejectIDReused is the rejection code of a command whose id was decided
// before in its workspace for another page or by another device
// (spec/PROTOCOL.md section 4.1). Its message names nothing of the first
// use, and it is not logged: the first decision keeps the id.
const RejectIDReused = "id-reused"

// answer is the reply to a command whose id was decided before: the
// original outcome when the same device sent it for the same page,
// id-reused otherwise.
func (d decision) answer(dev Device, env kbcore.Envelope) Outcome {
	if d.page == env.PageID && d.device == dev.DeviceID {
		return d.out
	}
	return Outcome{Rejected: &kbcore.Rejection{Code: RejectIDReused,
		Message: "this command id was already used for another command; send a new command with a new id"}}
}

// commit sends b followed by COMMIT in one round trip.
func (t *pipeTx) commit(b *pgx.Batch) error {
	defer t.waited(time.Now())
	b.Queue(sqlCommit)
	br := t.c.SendBatch(t.ctx, b)
	t.didSend()
	var tag pgconn.CommandTag
	for i := 0; i < b.Len(); i++ {
		var err error
		if tag, err = br.Exec(); err != nil {
			br.Close()
			return err
		}
	}
	if err := br.Close(); err != nil {
		return err
	}
	if tag.String() != "COMMIT" {
		return fmt.Errorf("store: transaction ended with %q instead of COMMIT", tag.String())
	}
	return nil
}

// errInDoubt marks the failure of a transaction whose COMMIT was sent and
// got no answer from the server: it may have committed.
type errInDoubt struct{ err error }

func (e errInDoubt) Error() string { return e.err.Error() + " (the commit may have happened)" }
func (e errInDoubt) Unwrap() error { return e.err }

// commitFailed is the error of a failed commit: err as classified, marked
// in doubt unless the server answered with an ERROR (the transaction rolled
// back). A FATAL or PANIC (the backend terminated, say by a shutdown: 57P01)
// may come after the commit went through, so it is in doubt too, as is a
// connection lost without an answer.
func commitFailed(raw, err error) error {
	var pg *pgconn.PgError
	if errors.As(raw, &pg) {
		sev := pg.SeverityUnlocalized
		if sev == "" {
			sev = pg.Severity
		}
		if sev == "ERROR" {
			return err
		}
	}
	return errInDoubt{err}
}

// inDoubt reports whether err is a commit that may have happened.
func inDoubt(err error) bool {
	var d errInDoubt
	return errors.As(err, &d)
}

// uniqueAsRetry turns a unique violation (two transactions creating the
// same title concurrently) into a retry: the next attempt plans against the
// committed winner and rejects properly.
func uniqueAsRetry(err error) error {
	var pg *pgconn.PgError
	if errors.As(err, &pg) && pg.Code == "23505" {
		return fmt.Errorf("%w: %v", ErrRetryable, err)
	}
	return classify(err)
}

// payloadJSON is a command's payload as the log keeps it, in canonical
// JSON (spec/PROTOCOL.md 4.4). The server hands in payloads its parse
// found or made canonical (Parsed says so: no scan here); any other
// caller's are canonicalized.
func payloadJSON(c kbcore.Command) []byte {
	if len(c.Payload) == 0 {
		return []byte("{}")
	}
	if c.Parsed.Canonical {
		return c.Payload
	}
	if b, err := kbcore.Canonical(c.Payload); err == nil {
		return b
	}
	return c.Payload
}

func missingLocks(plan kbcore.Plan, held []string) []string {
	h := map[string]bool{}
	for _, l := range held {
		h[l] = true
	}
	var need []string
	for _, l := range plan.Locks {
		if !h[l] {
			need = append(need, l)
		}
	}
	return need
}

func union(a, b []string) []string {
	m := map[string]bool{}
	var out []string
	for _, x := range append(append([]string{}, a...), b...) {
		if !m[x] {
			m[x] = true
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return out
}

// changesNames reports whether a plan may change a title or an alias.
func changesNames(plan kbcore.Plan) bool {
	for _, e := range plan.Effects {
		if kbcore.ChangesDirectory(e.Cmd.Type) {
			return true
		}
	}
	return false
}

// ---- the KB view inside a transaction ----

type txKB struct {
	ctx   context.Context
	s     *Store
	q     querier // the transaction's connection
	ws    string
	err   error
	heads map[string]head // page heads read in this transaction
	// docs are the documents a group transaction has changed so far; they
	// and the heads of their pages are ahead of the database rows, whose
	// writes are queued.
	docs  map[string]kbcore.Doc
	names map[string]*string // "t:"/"a:" + name -> page id (nil = none)
}

type head struct {
	ws  string
	seq int64
	ok  bool
}

// head reads a page's workspace and seq once per transaction; the pages
// the transaction writes are locked, so their heads cannot change.
func (k *txKB) head(pageID string) (string, int64, bool, error) {
	if h, ok := k.heads[pageID]; ok {
		return h.ws, h.seq, h.ok, nil
	}
	ws, seq, ok, err := pageHead(k.ctx, k.q, pageID)
	if err != nil {
		return "", 0, false, err
	}
	if k.heads == nil {
		k.heads = map[string]head{}
	}
	k.heads[pageID] = head{ws: ws, seq: seq, ok: ok}
	return ws, seq, ok, nil
}

func (k *txKB) fail(err error) {
	if k.err == nil {
		k.err = err
	}
}

func (k *txKB) Doc(pageID string) (kbcore.Doc, bool) {
	if d, ok := k.docs[pageID]; ok {
		return d, true
	}
	ws, seq, ok, err := k.head(pageID)
	if err != nil {
		k.fail(err)
		return kbcore.Doc{}, false
	}
	if !ok || ws != k.ws {
		return kbcore.Doc{}, false
	}
	d, err := k.s.doc(k.ctx, k.q, pageID, ws, seq)
	if err != nil {
		k.fail(err)
		return kbcore.Doc{}, false
	}
	return d, true
}

func (k *txKB) one(key, sql string, args ...any) (string, bool) {
	if id, ok := k.names[key]; ok {
		return deref(id), id != nil
	}
	var id string
	err := k.q.QueryRow(k.ctx, sql, args...).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		k.remember(key, nil)
		return "", false
	}
	if err != nil {
		k.fail(err)
		return "", false
	}
	k.remember(key, &id)
	return id, true
}

func (k *txKB) remember(key string, id *string) {
	if k.names == nil {
		k.names = map[string]*string{}
	}
	k.names[key] = id
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (k *txKB) PageByTitle(title string) (string, bool) {
	return k.one("t:"+title, `SELECT id::text FROM pages
		WHERE workspace_id = $1 AND sha256(title::bytea) = sha256($2::text::bytea) AND title = $2 AND merged_into IS NULL`, k.ws, title)
}

func (k *txKB) PageByAlias(alias string) (string, bool) {
	return k.one("a:"+alias, `SELECT a.page_id::text FROM aliases a JOIN pages p ON p.id = a.page_id
		WHERE a.workspace_id = $1 AND sha256(a.alias::bytea) = sha256($2::text::bytea) AND a.alias = $2 AND p.merged_into IS NULL
		ORDER BY a.page_id LIMIT 1`, k.ws, alias)
}

func (k *txKB) Referrers(title string) []kbcore.NodeAt {
	rows, err := k.q.Query(k.ctx, `SELECT DISTINCT l.page_id::text, l.node_id COLLATE "C"
		FROM links l JOIN pages p ON p.id = l.page_id
		WHERE l.workspace_id = $1 AND sha256(l.title::bytea) = sha256($2::text::bytea) AND l.title = $2 AND p.merged_into IS NULL
		ORDER BY 1, 2`, k.ws, title)
	if err != nil {
		k.fail(err)
		return nil
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (kbcore.NodeAt, error) {
		var n kbcore.NodeAt
		err := r.Scan(&n.PageID, &n.NodeID)
		return n, err
	})
	if err != nil {
		k.fail(err)
	}
	return out
}

// ---- writing effects ----

type writer struct {
	ws, device string
	kb         *txKB
	plan       kbcore.Plan
	batch      *pgx.Batch
	originSeq  int64
	// rows collects the rows of the transaction (of every command of a
	// group), queued as a few statements by rows.flush before COMMIT.
	rows *txWrites
	// entries are the log entries this command commits, in order.
	entries []pageEntry
}

// pageEntry is one committed command of a page, for the commit hooks.
type pageEntry struct {
	page  string
	entry Entry
}

// effects takes each effect as applied by the planner (the plan checked
// they all apply, each on its page's current document) and collects its
// writes: seq, changed nodes (written once, in their final state, by
// flush), log row; a changed page record is queued at once.
func (w *writer) effects() error {
	for _, e := range w.plan.Effects {
		if e.Cmd.Type == kbcore.TypeCreatePage {
			if d, ok := w.plan.Docs[e.PageID]; ok {
				w.rows.created[d.Page().Title] = e.PageID
			}
		}
	}
	for i, e := range w.plan.Effects {
		p := w.rows.page(e.PageID, w.ws)
		if !p.started {
			_, seq, ok, err := w.kb.head(e.PageID)
			if err != nil {
				return classify(err)
			}
			p.seq, p.started = seq, true
			// The document the planner applied the page's first effect
			// to (a cache hit by now); a page not yet created has no rows.
			p.knownBefore = !ok
			if ok {
				p.before, p.knownBefore = w.kb.Doc(e.PageID)
			}
		}
		res := e.Result // applied once, by the planner
		p.seq++
		seq := p.seq
		if i == 0 {
			w.originSeq = seq
		}
		if res.PageChanged || (seq == 1 && e.Cmd.Type == kbcore.TypeCreatePage) {
			w.page(e, res, seq)
		}
		for _, id := range res.Changed {
			p.dirty[id] = true
		}
		p.doc, p.changed = res.Doc, true
		inverse, _ := json.Marshal(res.Inverse)
		payload := payloadJSON(e.Cmd)
		w.rows.committedRow(w.ws, w.device, e, seq, payload, inverse)
		w.entries = append(w.entries, pageEntry{page: e.PageID, entry: Entry{Seq: seq,
			Cmd: kbcore.Command{ID: e.Cmd.ID, Type: e.Cmd.Type, Payload: payload}, DeviceID: w.device, Cause: e.Cause}})
	}
	return nil
}

// page queues the writes of a created or changed page record (its seq is
// written by flush).
func (w *writer) page(e kbcore.Effect, res kbcore.Result, seq int64) {
	p := res.Doc.Page()
	var merged *string
	if p.MergedInto != "" {
		merged = &p.MergedInto
	}
	if seq == 1 && e.Cmd.Type == kbcore.TypeCreatePage {
		w.batch.Queue(`INSERT INTO pages (workspace_id, id, title, dir, merged_into, seq) VALUES ($1, $2, $3, $4, $5, 1)`,
			w.ws, p.ID, p.Title, p.Dir, merged)
	} else {
		w.batch.Queue(`UPDATE pages SET title = $2, dir = $3, merged_into = $4 WHERE id = $1`,
			p.ID, p.Title, p.Dir, merged)
	}
	if res.PageChanged {
		w.batch.Queue(`DELETE FROM aliases WHERE page_id = $1`, p.ID)
		for i, a := range p.Aliases {
			w.batch.Queue(`INSERT INTO aliases (workspace_id, page_id, ord, alias) VALUES ($1, $2, $3, $4)`, w.ws, p.ID, i, a)
		}
	}
}
