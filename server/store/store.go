package store

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/subspace/kbkit/internal/taskpool"
	"github.com/subspace/kbkit/kbcore"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Errors callers can test with errors.Is.
var (
	// ErrUnauthorized: no device has that token.
	ErrUnauthorized = errors.New("store: unknown device token")
	// ErrNotFound: the page does not exist in the device's workspace.
	ErrNotFound = errors.New("store: page not found")
	// ErrForbidden: the page belongs to another workspace.
	ErrForbidden = errors.New("store: page belongs to another workspace")
	// ErrRetryable wraps transient database failures: the command may be
	// retried with the same id; it was not decided.
	ErrRetryable = errors.New("store: transient failure, retry with the same id")
	// ErrInvalidData wraps a database refusal of the data itself (SQLSTATE
	// class 22, data exceptions, and 54000, a value too large for an
	// index): the same input fails the same way on every retry, so it is
	// the caller's error (400), never a transient one.
	ErrInvalidData = errors.New("store: the database refused the data")
)

// NotifyChannel is the LISTEN/NOTIFY channel of committed commands. A
// transaction sends one notification per notifyMax bytes of its pages'
// heads, each payload "<page id>:<seq>" entries separated by spaces
// (NotifyPayloads, NotifyHeads): one notification per transaction,
// however many pages it wrote, costs the listening backends and the
// instances' listeners one wake-up instead of one per page.
const NotifyChannel = "kbkit_outbox"

// notifyMax is the most bytes of one NotifyChannel payload (PostgreSQL
// refuses 8,000 and more).
const notifyMax = 7900

// NotifyPayloads packs the heads of pages (page i at seqs[i]), as
// "<page id>:<seq>" entries, into as few NotifyChannel payloads as fit,
// in order.
func NotifyPayloads(pages []string, seqs []int64) []string {
	var out []string
	var b []byte
	for i, page := range pages {
		n := len(b)
		if n > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendInt(append(append(b, page...), ':'), seqs[i], 10)
		if n > 0 && len(b) > notifyMax {
			out = append(out, string(b[:n]))
			b = append(b[:0], b[n+1:]...)
		}
	}
	if len(b) > 0 {
		out = append(out, string(b))
	}
	return out
}

// NotifyHeads calls fn with each page head of a NotifyChannel payload, in
// order, skipping entries that do not parse.
func NotifyHeads(payload string, fn func(page string, seq int64)) {
	for entry := range strings.FieldsSeq(payload) {
		i := strings.LastIndexByte(entry, ':')
		if i < 0 {
			continue
		}
		seq, err := strconv.ParseInt(entry[i+1:], 10, 64)
		if err != nil {
			continue
		}
		fn(entry[:i], seq)
	}
}

// Outcome is the decision on one command.
type Outcome struct {
	Seq      int64             `json:"seq,omitempty"`
	Rejected *kbcore.Rejection `json:"rejected,omitempty"`
	// Duplicate says the id was decided before; this is the original outcome.
	Duplicate bool `json:"-"`
	// logged is what the transaction that committed the command logged,
	// on every page, its own entries among them: one value shared by
	// every command of the transaction, read only; nil for a rejection
	// or a duplicate.
	logged *txLog
}

// txLog is what one transaction logged, shared by the outcomes of its
// commands.
type txLog struct {
	entries []pageEntry
	mu      sync.Mutex
	pages   map[string]*pageMemo
}

// pageMemo is a page's part of a txLog: its entries, and what PageMemo
// made of them.
type pageMemo struct {
	once    sync.Once
	entries []Entry
	value   any
}

func newTxLog(entries []pageEntry) *txLog {
	if len(entries) == 0 {
		return nil
	}
	return &txLog{entries: entries}
}

// page returns the memo of page, its entries filtered once.
func (l *txLog) page(page string) *pageMemo {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.pages[page]
	if m == nil {
		if l.pages == nil {
			l.pages = map[string]*pageMemo{}
		}
		m = &pageMemo{}
		for _, e := range l.entries {
			if e.page == page {
				m.entries = append(m.entries, e.entry)
			}
		}
		l.pages[page] = m
	}
	return m
}

// PageLog is what the transaction that committed the command logged on
// page, in seq order, the command's own entries among them: the events a
// subscriber of the page gets for them, which a server may send with the
// answer (server/ws_echo.go). Nil for a rejection or a duplicate. The
// slice is shared by every command of the transaction: read only.
func (o Outcome) PageLog(page string) []Entry {
	if o.logged == nil {
		return nil
	}
	return o.logged.page(page).entries
}

// PageMemo returns make(page, PageLog(page)), calling make once per
// transaction and page: every command a group transaction committed shares its value,
// so that a server answering a group's callers on one page encodes the
// group's events once, not once per caller. make must be the same
// function at every call for a given page; nil for a rejection or a
// duplicate (make is not called).
func (o Outcome) PageMemo(page string, make func(page string, log []Entry) any) any {
	if o.logged == nil {
		return nil
	}
	m := o.logged.page(page)
	m.once.Do(func() { m.value = make(page, m.entries) })
	return m.value
}

// Store is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	// txTimeout bounds a group transaction (nanoseconds; 0: groupTimeout).
	txTimeout atomic.Int64
	fence     fence // fence.go
	mu        sync.Mutex
	// cache holds page documents by page id, valid for the seq they carry;
	// under the page lock a cached doc is used only if its seq is current.
	cache map[string]cachedDoc

	// groupMax is the most commands a group transaction decides; 0 or 1
	// turns group commit off (every command in its own transaction).
	groupMax int
	// groupTx is the most command transactions run at once (group.go).
	groupTx int
	// tasks runs the group transactions (runGroup): a transaction starts
	// the next before it ends, so defaultGroupTx+1 goroutines are parked
	// (a test that raises groupTx gets fresh goroutines past those).
	tasks *taskpool.Pool
	// groupWait bounds how long a group's goroutine waits for the callers
	// of its group to queue again before the next group (0: no wait).
	groupWait time.Duration
	groups    groups
	stats     groupStats
	waits     waitCounters // waits.go
	// groupHook, when set (tests), is called before a group transaction's
	// COMMIT is queued, with its number of commands and its write batch;
	// an error fails the transaction.
	groupHook func(n int, b *pgx.Batch) error

	hooksMu sync.Mutex
	hooks   atomic.Pointer[[]CommitHook]
	// late holds the entries of the group transactions whose hooks wait
	// for the next transaction to be sent (group.go, round; runLate).
	lateMu sync.Mutex
	late   []pageEntry
	// hookOrder runs the hooks one transaction at a time, late entries
	// first: a page's commits reach them in seq order.
	hookOrder sync.Mutex

	backends sync.Map // uint32 pid -> struct{}: the pool's live connections
}

// LocalBackend reports whether pid is the PostgreSQL backend of one of the
// store's connections: a notification it sent is of a commit this process
// made, which the commit hooks (OnCommit) deliver once its COMMIT is
// answered (a group's once the next transaction is sent, a few
// milliseconds at most).
func (s *Store) LocalBackend(pid uint32) bool {
	_, ok := s.backends.Load(pid)
	return ok
}

// CommitHook is told, after each COMMIT of this Store, the commands the
// transaction committed on one page, in seq order; a page's commits in
// the order of their seqs. It runs on one of the store's goroutines, one
// run at a time, and must not block: the dispatcher of the same process
// hands them to its subscribers without reading them back from the log
// (other processes learn of them by NOTIFY). A group transaction's
// commands reach it once the next transaction is sent, or when the group
// ends if none follows (group.go, round).
type CommitHook func(pageID string, entries []Entry)

// OnCommit adds a commit hook.
func (s *Store) OnCommit(h CommitHook) {
	s.hooksMu.Lock()
	defer s.hooksMu.Unlock()
	var hs []CommitHook
	if p := s.hooks.Load(); p != nil {
		hs = append(hs, *p...)
	}
	hs = append(hs, h)
	s.hooks.Store(&hs)
}

// committed tells the commit hooks what a transaction committed, page by
// page (entries of one page are consecutive seqs in order), after the
// late entries of the transactions before it.
func (s *Store) committed(entries []pageEntry) {
	s.hookOrder.Lock()
	defer s.hookOrder.Unlock()
	s.runLateLocked()
	s.deliver(entries)
}

// deferHooks keeps a committed group's entries for the hooks until the next
// transaction is sent (runLate), or until committed runs for another.
func (s *Store) deferHooks(entries []pageEntry) {
	if len(entries) == 0 {
		return
	}
	s.lateMu.Lock()
	s.late = append(s.late, entries...)
	s.lateMu.Unlock()
}

// runLate tells the hooks the entries deferHooks kept, if any.
func (s *Store) runLate() {
	s.lateMu.Lock()
	none := len(s.late) == 0
	s.lateMu.Unlock()
	if none {
		return
	}
	s.hookOrder.Lock()
	defer s.hookOrder.Unlock()
	s.runLateLocked()
}

func (s *Store) runLateLocked() {
	s.lateMu.Lock()
	late := s.late
	s.late = nil
	s.lateMu.Unlock()
	s.deliver(late)
}

// deliver hands entries to the hooks, page by page.
func (s *Store) deliver(entries []pageEntry) {
	p := s.hooks.Load()
	if p == nil || len(entries) == 0 {
		return
	}
	for len(entries) > 0 {
		page := entries[0].page
		n := 1
		for n < len(entries) && entries[n].page == page {
			n++
		}
		es := make([]Entry, n)
		for i := range es {
			es[i] = entries[i].entry
		}
		for _, h := range *p {
			h(page, es)
		}
		entries = entries[n:]
	}
}

type cachedDoc struct {
	seq int64
	doc kbcore.Doc
	ws  string // the page's workspace, when known
}

// Open connects, applies pending migrations and returns a Store.
func Open(ctx context.Context, dsn string) (*Store, error) {
	return OpenWith(ctx, dsn, OpenOptions{})
}

// OpenWith is Open with options.
func OpenWith(ctx context.Context, dsn string, o OpenOptions) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	// Every statement of the store is an index lookup or a range of one.
	// Prepared statements are planned once per connection; a generic plan
	// made while a table was small (a fresh database) would stay a
	// sequential scan as the table grows, until the next ANALYZE.
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	// And they are planned once: the multi-row statements take arrays,
	// whose lengths a custom plan would see and re-plan for at every
	// execution.
	for k, v := range map[string]string{"enable_seqscan": "off", "plan_cache_mode": "force_generic_plan"} {
		if _, set := cfg.ConnConfig.RuntimeParams[k]; !set {
			cfg.ConnConfig.RuntimeParams[k] = v
		}
	}
	// A connection given up on (its call's context ended) frees its pool
	// slot within closeBound, not pgx's 15 s.
	boundClose(&cfg.ConnConfig.Config, closeBound)
	s := &Store{cache: map[string]cachedDoc{}, groupMax: defaultGroupMax, groupTx: defaultGroupTx, groupWait: defaultGroupWait,
		tasks: taskpool.New(defaultGroupTx + 1)}
	// The backend pids of the pool's connections: a notification sent by
	// one of them is of a commit of this process (LocalBackend).
	cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		s.backends.Store(c.PgConn().PID(), struct{}{})
		return nil
	}
	cfg.BeforeClose = func(c *pgx.Conn) { s.backends.Delete(c.PgConn().PID()) }
	if o.Fence {
		cfg.PrepareConn = s.fence.prepare
		// A new connection skips an unfit server for the DSN's next host.
		prev := cfg.ConnConfig.ValidateConnect
		cfg.ConnConfig.ValidateConnect = func(ctx context.Context, pc *pgconn.PgConn) error {
			if prev != nil {
				if err := prev(ctx, pc); err != nil {
					return err
				}
			}
			return validateFit(ctx, pc)
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: connect: %w", err)
	}
	s.pool = pool
	if err := s.Migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// Pool exposes the connection pool (for the dispatcher and tests).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close ends the parked goroutines and closes the pool.
func (s *Store) Close() {
	s.tasks.Close()
	s.pool.Close()
}

// Migrate applies the embedded migrations not applied yet, in order, under
// an advisory lock so that concurrent servers migrate once.
func (s *Store) Migrate(ctx context.Context) error {
	files, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(files)
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7007)`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		for _, f := range files {
			base := f[strings.LastIndex(f, "/")+1:]
			v, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
			if err != nil {
				return fmt.Errorf("store: migration %s: bad version", f)
			}
			var done bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`, v).Scan(&done); err != nil {
				return err
			}
			if done {
				continue
			}
			sql, _ := migrations.ReadFile(f)
			if _, err := tx.Exec(ctx, string(sql)); err != nil {
				return fmt.Errorf("store: migration %s: %w", base, err)
			}
			if step := goMigrations[v]; step != nil {
				if err := step(ctx, tx); err != nil {
					return fmt.Errorf("store: migration %s: %w", base, err)
				}
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, v); err != nil {
				return err
			}
		}
		return nil
	})
}

// ---- errors ----

// classify marks transient database failures as ErrRetryable.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch {
		case pg.Code == "40001", pg.Code == "40P01", // serialization failure, deadlock
			strings.HasPrefix(pg.Code, "08"),                           // connection exceptions
			pg.Code == "57P01", pg.Code == "57P02", pg.Code == "57P03", // shutdown, crash, cannot connect now
			pg.Code == "53300": // too many connections
			return fmt.Errorf("%w: %v", ErrRetryable, err)
		case strings.HasPrefix(pg.Code, "22"), pg.Code == "54000":
			return fmt.Errorf("%w: %v", ErrInvalidData, err)
		}
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %v", ErrRetryable, err)
	}
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return fmt.Errorf("%w: %v", ErrRetryable, err)
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return fmt.Errorf("%w: %v", ErrRetryable, err)
	}
	// A broken connection mid-transaction surfaces as a net error or EOF.
	if strings.Contains(err.Error(), "conn closed") || strings.Contains(err.Error(), "EOF") ||
		strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "broken pipe") {
		return fmt.Errorf("%w: %v", ErrRetryable, err)
	}
	return err
}

// IsRetryable reports whether err is a transient failure.
func IsRetryable(err error) bool { return errors.Is(err, ErrRetryable) }

// ---- page reads ----

// querier is what pgx.Tx and *pgxpool.Pool share.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// pageHead reads a page's workspace and seq; ok is false if it does not exist.
func pageHead(ctx context.Context, q querier, pageID string) (ws string, seq int64, ok bool, err error) {
	err = q.QueryRow(ctx, `SELECT workspace_id::text, seq FROM pages WHERE id = $1`, pageID).Scan(&ws, &seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", 0, false, nil
	}
	return ws, seq, err == nil, err
}

// loadDoc reads a page's document from its rows.
func loadDoc(ctx context.Context, q querier, pageID string) (kbcore.Doc, error) {
	var p kbcore.Page
	var merged *string
	err := q.QueryRow(ctx, `SELECT id::text, title, dir, merged_into::text FROM pages WHERE id = $1`, pageID).
		Scan(&p.ID, &p.Title, &p.Dir, &merged)
	if err != nil {
		return kbcore.Doc{}, err
	}
	if merged != nil {
		p.MergedInto = *merged
	}
	rows, err := q.Query(ctx, `SELECT alias FROM aliases WHERE page_id = $1 ORDER BY ord`, pageID)
	if err != nil {
		return kbcore.Doc{}, err
	}
	p.Aliases, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return kbcore.Doc{}, err
	}
	rows, err = q.Query(ctx, `SELECT id, coalesce(parent, ''), rank, kind, text, outputs, cells FROM nodes WHERE page_id = $1`, pageID)
	if err != nil {
		return kbcore.Doc{}, err
	}
	var nodes []kbcore.Node
	for rows.Next() {
		var n kbcore.Node
		var outputs, cells []byte
		if err := rows.Scan(&n.ID, &n.Parent, &n.Rank, &n.Kind, &n.Text, &outputs, &cells); err != nil {
			rows.Close()
			return kbcore.Doc{}, err
		}
		if outputs != nil {
			if err := json.Unmarshal(outputs, &n.Outputs); err != nil {
				rows.Close()
				return kbcore.Doc{}, err
			}
		}
		if cells != nil {
			if err := json.Unmarshal(cells, &n.Cells); err != nil {
				rows.Close()
				return kbcore.Doc{}, err
			}
		}
		nodes = append(nodes, n)
	}
	if err := rows.Err(); err != nil {
		return kbcore.Doc{}, err
	}
	return kbcore.NewDoc(p, nodes)
}

// doc returns a page's document at seq, from the cache when it is current.
func (s *Store) doc(ctx context.Context, q querier, pageID, ws string, seq int64) (kbcore.Doc, error) {
	s.mu.Lock()
	c, ok := s.cache[pageID]
	s.mu.Unlock()
	if ok && c.seq == seq {
		return c.doc, nil
	}
	d, err := loadDoc(ctx, q, pageID)
	if err != nil {
		return kbcore.Doc{}, err
	}
	s.remember(pageID, ws, seq, d)
	return d, nil
}

func (s *Store) remember(pageID, ws string, seq int64, d kbcore.Doc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.cache[pageID]; !ok || c.seq <= seq {
		s.cache[pageID] = cachedDoc{seq: seq, doc: d, ws: ws}
	}
}

// Snapshot is a page read: the document at Seq and the outcomes of the ids
// asked about.
type Snapshot struct {
	Doc      kbcore.Doc                `json:"doc"`
	Seq      int64                     `json:"seq"`
	Outcomes map[string]kbcore.Outcome `json:"outcomes"`
}

// Page reads a page of the device's workspace in one consistent snapshot,
// with the outcomes of the given command ids (ids never seen are absent).
func (s *Store) Page(ctx context.Context, dev Device, pageID string, pending []string) (Snapshot, error) {
	var snap Snapshot
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		ws, seq, ok, err := pageHead(ctx, tx, pageID)
		if err != nil {
			return err
		}
		if !ok {
			return ErrNotFound
		}
		if ws != dev.WorkspaceID {
			return ErrForbidden
		}
		if snap.Doc, err = s.doc(ctx, tx, pageID, ws, seq); err != nil {
			return err
		}
		snap.Seq = seq
		snap.Outcomes = map[string]kbcore.Outcome{}
		if len(pending) == 0 {
			return nil
		}
		var ids []string
		for _, id := range pending {
			if _, err := uuid.Parse(id); err == nil {
				ids = append(ids, id)
			}
		}
		rows, err := tx.Query(ctx, `SELECT id::text, coalesce(seq, 0), outcome, coalesce(code, ''), coalesce(message, '')
			FROM command_log WHERE workspace_id = $3 AND id = ANY($1::uuid[]) AND page_id = $2`, ids, pageID, dev.WorkspaceID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, outcome, code, msg string
			var seq int64
			if err := rows.Scan(&id, &seq, &outcome, &code, &msg); err != nil {
				return err
			}
			if outcome == "rejected" {
				snap.Outcomes[id] = kbcore.Outcome{Rejected: &kbcore.Rejection{Code: code, Message: msg}}
			} else {
				snap.Outcomes[id] = kbcore.Outcome{Seq: seq}
			}
		}
		return rows.Err()
	})
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrForbidden) {
		return Snapshot{}, err
	}
	return snap, classify(err)
}

// Entry is one committed command of a page's log.
type Entry struct {
	Seq      int64          `json:"seq"`
	Cmd      kbcore.Command `json:"cmd"`
	DeviceID string         `json:"device_id,omitempty"`
	Cause    string         `json:"cause,omitempty"`
}

// Log reads a page's committed commands with seq > after, in seq order, at
// most limit of them (0 = no limit).
func (s *Store) Log(ctx context.Context, pageID string, after int64, limit int) ([]Entry, error) {
	if limit <= 0 {
		limit = 1 << 30
	}
	rows, err := s.pool.Query(ctx, `SELECT seq, id::text, type, payload, coalesce(device_id::text, ''), coalesce(cause::text, '')
		FROM command_log WHERE page_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, pageID, after, limit)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		var e Entry
		var payload []byte
		if err := rows.Scan(&e.Seq, &e.Cmd.ID, &e.Cmd.Type, &payload, &e.DeviceID, &e.Cause); err != nil {
			return nil, classify(err)
		}
		e.Cmd.Payload = payload
		out = append(out, e)
	}
	return out, classify(rows.Err())
}

// PageWorkspace returns the workspace of a page (for authorising reads).
func (s *Store) PageWorkspace(ctx context.Context, pageID string) (string, error) {
	ws, _, ok, err := pageHead(ctx, s.pool, pageID)
	if err != nil {
		return "", classify(err)
	}
	if !ok {
		return "", ErrNotFound
	}
	return ws, nil
}

// retryDelay is the pause between attempts of a transaction that failed
// transiently.
var retryDelay = 20 * time.Millisecond

// cachedHeads is the head (workspace, seq) of each page from the document
// cache, or false when one of them is not cached with its workspace: a
// group decided against them (optimistically, see groupOnce) commits only
// if they are still the pages' heads.
func (s *Store) cachedHeads(pages []string) (map[string]head, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	heads := make(map[string]head, len(pages))
	for _, p := range pages {
		c, ok := s.cache[p]
		if !ok || c.ws == "" {
			return nil, false
		}
		heads[p] = head{ws: c.ws, seq: c.seq, ok: true}
	}
	return heads, true
}
