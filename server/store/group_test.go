package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/server/pgprovider"
)

// queued reports whether page has a command transaction running and how
// many commands wait behind it.
func queued(st *Store, page string) (busy bool, n int) {
	st.groups.mu.Lock()
	defer st.groups.mu.Unlock()
	for _, r := range st.groups.queue {
		if r.env.PageID == page {
			n++
		}
	}
	return st.groups.busy[page], n
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a hang detector
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// holdPage takes a page's lock in a transaction of its own until release.
func holdPage(t *testing.T, st *Store, page string) (release func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := st.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, sqlLockPages, []string{page}); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := tx.Commit(ctx); err != nil {
			t.Error(err)
		}
	}
}

// checkIndex compares a page's index rows (links, labels, deps) with the
// index of its projection's nodes.
func checkIndex(t *testing.T, st *Store, page string) {
	t.Helper()
	ctx := context.Background()
	d, err := loadDoc(ctx, st.pool, page)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, n := range d.Nodes() {
		x := kbcore.IndexNode(n)
		for i, r := range x.Refs {
			want = append(want, fmt.Sprintf("link %s %d %s %s", n.ID, i, r.Kind, kbcore.NormalizeTitle(r.Title)))
		}
		if x.Label != nil {
			want = append(want, fmt.Sprintf("label %s %s %s", n.ID, x.Label.Key, x.Label.Text))
		}
		for i, dep := range x.Deps {
			want = append(want, fmt.Sprintf("dep %s %d %s", n.ID, i, dep.Cell))
		}
	}
	rows, err := st.pool.Query(ctx, `
		SELECT format('link %s %s %s %s', node_id, ord, kind, title) FROM links WHERE page_id = $1
		UNION ALL SELECT format('label %s %s %s', node_id, key, text) FROM labels WHERE page_id = $1
		UNION ALL SELECT format('dep %s %s %s', node_id, ord, cell) FROM deps WHERE page_id = $1`, page)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(want)
	sort.Strings(got)
	if (len(want) > 0 || len(got) > 0) && !reflect.DeepEqual(want, got) {
		t.Fatalf("index rows of %s differ from its projection's index:\nwant %q\ngot  %q", page, want, got)
	}
}

type result struct {
	Out Outcome
	Err string
}

func (r result) String() string {
	b, _ := json.Marshal(r.Out)
	return fmt.Sprintf("%s dup=%v err=%q", b, r.Out.Duplicate, r.Err)
}

// TestGroupCommitHotPage: many writers on one page, with rejections and
// retried ids (sequential and concurrent); batches form, and every
// invariant of the single-command path holds.
func TestGroupCommitHotPage(t *testing.T) { hotPage(t, false) }

// TestGroupCommitHotPageChaos: the same with every third group transaction
// failing midway and callers that give up (short deadlines) and retry.
func TestGroupCommitHotPageChaos(t *testing.T) { hotPage(t, true) }

func hotPage(t *testing.T, chaos bool) {
	st, dev, page := setup(t)
	ctx := context.Background()
	mustSubmit(t, st, dev, env(page, "create-after", map[string]any{"text": "", "node": "n"}))
	var groupTx atomic.Int64
	if chaos {
		st.groupHook = func(n int, b *pgx.Batch) error {
			if groupTx.Add(1)%3 == 0 {
				b.Queue(`SELECT 1/0`)
			}
			return nil
		}
	}
	var gaveUp atomic.Int64
	// submit sends e until it is decided, as a client does.
	submit := func(e kbcore.Envelope, i int) (Outcome, error) {
		for attempt := 0; ; attempt++ {
			c, cancel := ctx, context.CancelFunc(func() {})
			if chaos && (i+attempt)%4 == 0 {
				c, cancel = context.WithTimeout(ctx, time.Duration(i%5)*300*time.Microsecond)
			}
			out, err := st.Submit(c, dev, e)
			cancel()
			if err != nil && IsRetryable(err) && chaos && attempt < 100 {
				gaveUp.Add(1)
				continue
			}
			return out, err
		}
	}

	const writers, each = 16, 30
	// twins[w/2][i] is sent by writers w and w^1: concurrent retries.
	twins := make([][]kbcore.Envelope, writers/2)
	for p := range twins {
		for i := 0; i < each; i++ {
			twins[p] = append(twins[p], env(page, "edit-text", map[string]any{"node": "n", "text": fmt.Sprintf("twin %d-%d", p, i)}))
		}
	}
	type sent struct {
		env kbcore.Envelope
		out Outcome
	}
	var mu sync.Mutex
	var all []sent
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var mine []sent
			for i := 0; i < each; i++ {
				var e kbcore.Envelope
				switch {
				case i%5 == 4 && len(mine) > 0: // a retry of an earlier id
					e = mine[(i*7+w)%len(mine)].env
				case i%5 == 3:
					e = twins[w/2][i]
				case i%5 == 2:
					e = env(page, "edit-text", map[string]any{"node": "ghost", "text": "boo"})
				case i%5 == 1:
					e = env(page, "edit-text", map[string]any{"node": "n", "text": fmt.Sprintf("count: %d #Budget w%d", i, w)})
				default:
					e = env(page, "create-after", map[string]any{"after": "n", "text": fmt.Sprintf("[[Budget]] line %d-%d", w, i)})
				}
				e.DeviceID = dev.DeviceID
				out, err := submit(e, i+w)
				if err != nil {
					errs <- fmt.Errorf("writer %d command %d (%s): %w", w, i, e.Type, err)
					return
				}
				mine = append(mine, sent{e, out})
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// One outcome per id, whoever asked and however often.
	first := map[string]Outcome{}
	for _, s := range all {
		o := s.out
		if err := checkLog(s.env, o); err != nil {
			t.Fatal(err)
		}
		o.Duplicate, o.logged = false, nil
		if f, ok := first[s.env.ID]; ok {
			if !reflect.DeepEqual(f, o) {
				t.Fatalf("id %s: outcomes %+v and %+v", s.env.ID, f, o)
			}
			continue
		}
		first[s.env.ID] = o
	}
	seqs := map[int64]string{}
	accepted, rejected := 0, 0
	for id, o := range first {
		switch {
		case o.Rejected != nil:
			rejected++
			if o.Rejected.Code != "node-not-found" || o.Seq != 0 {
				t.Fatalf("id %s: rejection %+v", id, o)
			}
		case o.Seq > 0:
			accepted++
			if other, ok := seqs[o.Seq]; ok {
				t.Fatalf("seq %d given to %s and %s", o.Seq, other, id)
			}
			seqs[o.Seq] = id
		default:
			t.Fatalf("id %s: empty outcome", id)
		}
	}
	// The log: every accepted id once, at its seq; every rejected id once,
	// without seq; seqs gapless from 1 (fold checks that).
	rows, err := st.pool.Query(ctx, `SELECT id::text, coalesce(seq, 0), outcome, coalesce(code, '') FROM command_log WHERE page_id = $1`, page)
	if err != nil {
		t.Fatal(err)
	}
	logged := map[string]bool{}
	nCommitted := 0
	for rows.Next() {
		var id, outcome, code string
		var seq int64
		if err := rows.Scan(&id, &seq, &outcome, &code); err != nil {
			t.Fatal(err)
		}
		logged[id] = true
		if outcome == "committed" {
			nCommitted++
		}
		o, ok := first[id]
		if !ok {
			continue // the setup commands
		}
		if (outcome == "committed") != (o.Rejected == nil) || seq != o.Seq || (o.Rejected != nil && code != o.Rejected.Code) {
			t.Fatalf("log row of %s: %s seq %d code %q; outcome %+v", id, outcome, seq, code, o)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for id := range first {
		if !logged[id] {
			t.Fatalf("id %s decided but not logged", id)
		}
	}
	if nCommitted != accepted+2 {
		t.Fatalf("%d committed log rows, %d accepted commands + 2 setup commands", nCommitted, accepted)
	}
	_, n := fold(t, st, page)
	if n != int64(accepted+2) {
		t.Fatalf("log has %d commands, want %d", n, accepted+2)
	}
	var head, nseq int64
	if err := st.pool.QueryRow(ctx, `SELECT p.seq, (SELECT count(DISTINCT seq) FROM command_log c WHERE c.page_id = p.id AND c.seq BETWEEN 1 AND p.seq)
		FROM pages p WHERE p.id = $1`, page).Scan(&head, &nseq); err != nil || head != n || nseq != n {
		t.Fatalf("page seq %d with %d distinct seqs 1..seq logged (%v), want %d", head, nseq, err, n)
	}
	checkProjection(t, st, page)
	checkIndex(t, st, page)
	// Index rows of the page: one link per created line, to Budget itself.
	var links int
	if err := st.pool.QueryRow(ctx, `SELECT count(*) FROM links WHERE page_id = $1 AND target_page = $1`, page).Scan(&links); err != nil {
		t.Fatal(err)
	}
	if links == 0 {
		t.Fatal("no link rows written for the created lines")
	}
	stats := st.Stats()
	t.Logf("accepted %d, rejected %d, gave up %d; %+v", accepted, rejected, gaveUp.Load(), stats)
	if stats.Batches == 0 || stats.BatchedCommands < 2*stats.Batches {
		t.Fatalf("no batches formed under contention: %+v", stats)
	}
	if (stats.BatchFailures != 0) != chaos {
		t.Fatalf("batch failures: %+v", stats)
	}
	if chaos && gaveUp.Load() == 0 {
		t.Fatal("no caller gave up")
	}
	// The cache serves the committed document.
	snap, err := st.Page(ctx, dev, page, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := fold(t, st, page)
	if snap.Seq != n || !snap.Doc.Equal(want) {
		t.Fatalf("snapshot at seq %d differs from the fold of %d commands", snap.Seq, n)
	}
}

// scenario queues a fixed list of commands behind a held page lock, so that
// they are decided in one drain, and returns their results.
func scenario(t *testing.T, st *Store, page string, dev, other Device, hook func(n int, b *pgx.Batch) error) ([]result, []Entry, kbcore.Doc) {
	t.Helper()
	ctx := context.Background()
	st.groupHook = hook
	ids := make([]string, 12)
	for i := range ids {
		ids[i] = uuid.NewSHA1(uuid.NameSpaceOID, []byte(fmt.Sprint("scenario-", i))).String()
	}
	mk := func(i int, typ string, payload any) kbcore.Envelope {
		e := env(page, typ, payload)
		e.ID = ids[i]
		return e
	}
	type call struct {
		dev Device
		env kbcore.Envelope
	}
	calls := []call{
		{dev, mk(0, "create-after", map[string]any{"after": "n", "node": "a", "text": "a"})},                     // alone: the page was idle
		{dev, mk(1, "create-after", map[string]any{"after": "a", "node": "b", "text": "b"})},                     // group 1
		{dev, mk(2, "edit-text", map[string]any{"node": "b", "text": "B"})},                                      // needs 1 in the same group
		{dev, mk(3, "edit-text", map[string]any{"node": "ghost", "text": "x"})},                                  // rejected
		{dev, mk(1, "create-after", map[string]any{"after": "a", "node": "b", "text": "b"})},                     // retry within the group
		{dev, mk(3, "edit-text", map[string]any{"node": "ghost", "text": "x"})},                                  // retried rejection
		{dev, mk(0, "create-after", map[string]any{"after": "n", "node": "a", "text": "a"})},                     // retry of a committed id
		{dev, mk(4, "create-page", map[string]any{"title": "Again"})},                                            // page-exists
		{other, mk(5, "edit-text", map[string]any{"node": "a", "text": "intruder"})},                             // forbidden
		{dev, mk(6, "create-after", map[string]any{"after": "b", "node": "c", "text": "see [[Taxes]]"})},         // ends the group: a new page
		{dev, mk(7, "edit-text", map[string]any{"node": "c", "text": "total: 5\nsee [[Taxes]] and [[Budget]]"})}, // group 2
		{dev, mk(8, "delete", map[string]any{"node": "a"})},
		{dev, mk(9, "indent", map[string]any{"node": "c"})},
		{dev, mk(10, "set-cell", map[string]any{"node": "c", "cell": "A1", "value": "1"})}, // not-a-table
		{dev, mk(11, "move-node", map[string]any{"node": "b", "parent": nil, "after": nil})},
	}
	results := make([]result, len(calls))
	if st.groupMax <= 1 {
		// The reference: one at a time, in order.
		for i, c := range calls {
			c.env.DeviceID = c.dev.DeviceID
			out, err := st.Submit(ctx, c.dev, c.env)
			results[i].Out = out
			if err != nil {
				results[i].Err = err.Error()
			}
		}
		log, err := st.Log(ctx, page, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		checkProjection(t, st, page)
		d, err := loadDoc(ctx, st.pool, page)
		if err != nil {
			t.Fatal(err)
		}
		return results, log, d
	}
	release := holdPage(t, st, page)
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.env.DeviceID = c.dev.DeviceID
			out, err := st.Submit(ctx, c.dev, c.env)
			results[i].Out = out
			if err != nil {
				results[i].Err = err.Error()
			}
		}()
		// Queue in order: the first runs alone (blocked on the lock), the
		// rest wait behind it.
		waitFor(t, fmt.Sprintf("command %d queued", i), func() bool {
			busy, n := queued(st, page)
			return busy && n == i
		})
	}
	release()
	wg.Wait()
	// A group's committed commands each carry the whole transaction's
	// log of the page: call 1's holds call 2's entry, decided after it in
	// group 1 (without a hook, whose failures decide each call alone).
	if s1, s2 := results[1].Out.Seq, results[2].Out.Seq; hook == nil && s1 > 0 && s2 > 0 {
		var seqs []int64
		for _, e := range results[1].Out.PageLog(page) {
			seqs = append(seqs, e.Seq)
		}
		if !slices.Contains(seqs, s2) {
			t.Errorf("call 1 (seq %d) has the log %v: want its group's, with call 2's seq %d", s1, seqs, s2)
		}
		// And what a server makes of that log (its events) is made once
		// for the group, not once per call.
		made := 0
		mk := func(p string, log []Entry) any { made++; return len(log) }
		a, b := results[1].Out.PageMemo(page, mk), results[2].Out.PageMemo(page, mk)
		if made != 1 || a != b || a != len(seqs) {
			t.Errorf("PageMemo of calls 1 and 2 of one group: made %d times (%v, %v), want once, of the %d entries", made, a, b, len(seqs))
		}
	}
	log, err := st.Log(ctx, page, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkProjection(t, st, page)
	checkIndex(t, st, page)
	d, err := loadDoc(ctx, st.pool, page)
	if err != nil {
		t.Fatal(err)
	}
	return results, log, d
}

// scenarioStore makes a store with the same page (same ids) as the others.
func scenarioStore(t *testing.T, page string) (*Store, Device, Device) {
	st := newStore(t)
	ctx := context.Background()
	pd, err := st.PairDevice(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	od, err := st.PairDevice(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	create := env(page, "create-page", map[string]any{"title": "Budget"})
	create.ID = uuid.NewSHA1(uuid.NameSpaceOID, []byte("create")).String()
	mustSubmit(t, st, pd.Device, create)
	n := env(page, "create-after", map[string]any{"text": "", "node": "n"})
	n.ID = uuid.NewSHA1(uuid.NameSpaceOID, []byte("n")).String()
	mustSubmit(t, st, pd.Device, n)
	return st, pd.Device, od.Device
}

// TestGroupCommitFallback: the same queue decided with group commit, with
// every group transaction failing midway (after its writes, before its
// COMMIT), and without group commit gives the same outcomes, logs and
// documents.
func TestGroupCommitFallback(t *testing.T) {
	page := uuid.NewString()
	fail := func(n int, b *pgx.Batch) error {
		b.Queue(`SELECT 1/0`) // fails after every write of the group
		return nil
	}
	var (
		names   = []string{"grouped", "failing", "alone"}
		results [3][]result
		logs    [3][]Entry
		docs    [3]kbcore.Doc
		stats   [3]Stats
	)
	for i, name := range names {
		st, dev, other := scenarioStore(t, page)
		var hook func(int, *pgx.Batch) error
		switch name {
		case "failing":
			hook = fail
		case "alone":
			st.groupMax = 0
		}
		results[i], logs[i], docs[i] = scenario(t, st, page, dev, other, hook)
		stats[i] = st.Stats()
		// Device ids differ between the databases.
		for j := range logs[i] {
			logs[i][j].DeviceID = ""
		}
	}
	for i := range results[0] {
		t.Logf("%2d %s", i, results[0][i])
	}
	t.Logf("stats: grouped %+v, failing %+v, alone %+v", stats[0], stats[1], stats[2])
	if stats[0].Batches < 2 || stats[0].BatchFailures != 0 {
		t.Fatalf("grouped run: %+v", stats[0])
	}
	if stats[1].Batches != 0 || stats[1].BatchFailures == 0 {
		t.Fatalf("failing run: %+v", stats[1])
	}
	if stats[2] != (Stats{}) {
		t.Fatalf("run without group commit: %+v", stats[2])
	}
	for i := 1; i < 3; i++ {
		if len(results[i]) != len(results[0]) {
			t.Fatal("result counts differ")
		}
		for j := range results[0] {
			a, b := results[0][j], results[i][j]
			// Error texts name device and workspace ids; compare the kind.
			if !reflect.DeepEqual(withoutLog(a.Out), withoutLog(b.Out)) || (a.Err == "") != (b.Err == "") {
				t.Fatalf("command %d: %s %s, %s %s", j, names[0], a, names[i], b)
			}
		}
		if !reflect.DeepEqual(logs[0], logs[i]) {
			t.Fatalf("logs differ between %s and %s:\n%+v\n%+v", names[0], names[i], logs[0], logs[i])
		}
		if !docs[0].Equal(docs[i]) {
			t.Fatalf("documents differ between %s and %s", names[0], names[i])
		}
	}
	// Spot checks of the expected decisions.
	r := results[0]
	for _, c := range []struct {
		i    int
		seq  int64
		code string
		dup  bool
		err  bool
	}{
		{0, 3, "", false, false}, {1, 4, "", false, false}, {2, 5, "", false, false},
		{3, 0, "node-not-found", false, false}, {4, 4, "", true, false}, {5, 0, "node-not-found", true, false},
		{6, 3, "", true, false}, {7, 0, "page-exists", false, false}, {8, 0, "", false, true},
		{9, 6, "", false, false}, {10, 7, "", false, false}, {11, 8, "", false, false},
		{12, 9, "", false, false}, {13, 0, "not-a-table", false, false}, {14, 10, "", false, false},
	} {
		got := r[c.i]
		code := ""
		if got.Out.Rejected != nil {
			code = got.Out.Rejected.Code
		}
		if got.Out.Seq != c.seq || code != c.code || got.Out.Duplicate != c.dup || (got.Err != "") != c.err {
			t.Errorf("command %d: %s", c.i, got)
		}
	}
}

// TestGroupCommitCancelledWaiter: a queued caller that gives up gets a
// retryable error and its command is not decided; the others are.
func TestGroupCommitCancelledWaiter(t *testing.T) {
	st, dev, page := setup(t)
	ctx := context.Background()
	release := holdPage(t, st, page)
	first := env(page, "create-after", map[string]any{"node": "a", "text": "a"})
	first.DeviceID = dev.DeviceID
	var wg sync.WaitGroup
	var firstOut, lastOut Outcome
	var firstErr, lastErr error
	wg.Add(1)
	go func() { defer wg.Done(); firstOut, firstErr = st.Submit(ctx, dev, first) }()
	waitFor(t, "the first command running", func() bool { busy, _ := queued(st, page); return busy })

	cctx, cancel := context.WithCancel(ctx)
	gone := env(page, "edit-text", map[string]any{"node": "a", "text": "gone"})
	gone.DeviceID = dev.DeviceID
	goneErr := make(chan error, 1)
	go func() { _, err := st.Submit(cctx, dev, gone); goneErr <- err }()
	waitFor(t, "the second command queued", func() bool { _, n := queued(st, page); return n == 1 })

	last := env(page, "edit-text", map[string]any{"node": "a", "text": "last"})
	last.DeviceID = dev.DeviceID
	wg.Add(1)
	go func() { defer wg.Done(); lastOut, lastErr = st.Submit(ctx, dev, last) }()
	waitFor(t, "the third command queued", func() bool { _, n := queued(st, page); return n == 2 })

	cancel()
	if err := <-goneErr; !IsRetryable(err) || !errors.Is(err, ErrRetryable) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	release()
	wg.Wait()
	if firstErr != nil || lastErr != nil || firstOut.Seq != 2 || lastOut.Seq != 3 {
		t.Fatalf("others: %+v %v, %+v %v", firstOut, firstErr, lastOut, lastErr)
	}
	var n int
	if err := st.pool.QueryRow(ctx, `SELECT count(*) FROM command_log WHERE id = $1`, gone.ID).Scan(&n); err != nil || n != 0 {
		t.Fatalf("cancelled command logged %d times (%v)", n, err)
	}
	// Its retry is decided normally.
	if out := mustSubmit(t, st, dev, gone); out.Seq != 4 || out.Duplicate {
		t.Fatalf("retry of the cancelled command: %+v", out)
	}
	checkProjection(t, st, page)
}

// BenchmarkHotPage: 8 writers editing one page, on a server with fsync and
// synchronous_commit on (not the fsync-off test server), with and without
// group commit. Reports commands/s and the mean group size.
func BenchmarkHotPage(b *testing.B) {
	const writers = 8
	ctx := context.Background()
	opts := pgprovider.OptionsFromEnv()
	opts.Fast = false
	srv, err := pgprovider.Start(ctx, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Stop(context.Background()) })
	for _, mode := range []struct {
		name     string
		groupMax int
	}{{"group=off", 0}, {"group=on", defaultGroupMax}} {
		dsn, drop, err := srv.NewDatabase(ctx, "")
		if err != nil {
			b.Fatal(err)
		}
		st, err := Open(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		st.groupMax = mode.groupMax
		pd, err := st.PairDevice(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		dev := pd.Device
		b.Run(mode.name, func(b *testing.B) {
			page := uuid.NewString()
			for _, e := range []kbcore.Envelope{
				env(page, "create-page", map[string]any{"title": "Hot " + page}),
				env(page, "create-after", map[string]any{"node": "n", "text": ""}),
			} {
				e.DeviceID = dev.DeviceID
				if out, err := st.Submit(ctx, dev, e); err != nil || out.Rejected != nil {
					b.Fatalf("setup: %+v %v", out, err)
				}
			}
			before := st.Stats()
			prev := runtime.GOMAXPROCS(writers)
			defer runtime.GOMAXPROCS(prev)
			b.SetParallelism(1) // GOMAXPROCS goroutines: the writers
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					i++
					e := env(page, "edit-text", map[string]any{"node": "n", "text": fmt.Sprintf("keystroke %d", i)})
					if i%8 == 0 {
						e = env(page, "create-after", map[string]any{"after": "n", "text": "line"})
					}
					e.DeviceID = dev.DeviceID
					if out, err := st.Submit(ctx, dev, e); err != nil || out.Rejected != nil {
						b.Errorf("submit: %+v %v", out, err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cmds/s")
			after := st.Stats()
			if n := after.Batches - before.Batches; n > 0 {
				b.ReportMetric(float64(after.BatchedCommands-before.BatchedCommands)/float64(n), "cmds/batch")
			}
		})
		st.Close()
		if err := drop(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// withoutLog is o without what its transaction logged, which the group
// and the lone paths hold differently (a group's holds the other
// commands it logged before this one).
func withoutLog(o Outcome) Outcome { o.logged = nil; return o }

// checkLog checks a committed command's PageLog of its page: consecutive
// seqs, the command's own entry among them at its seq. A duplicate or a
// rejection has none.
func checkLog(env kbcore.Envelope, o Outcome) error {
	log := o.PageLog(env.PageID)
	if o.Duplicate || o.Rejected != nil || o.Seq == 0 {
		if o.logged != nil {
			return fmt.Errorf("id %s: %+v has a log", env.ID, o)
		}
		return nil
	}
	own := false
	for _, e := range log {
		own = own || (e.Seq == o.Seq && e.Cmd.ID == env.ID)
	}
	if !own {
		return fmt.Errorf("id %s: seq %d, log %+v: want the command's entry", env.ID, o.Seq, log)
	}
	for i := 1; i < len(log); i++ {
		if log[i].Seq != log[i-1].Seq+1 {
			return fmt.Errorf("id %s: log seqs %d then %d", env.ID, log[i-1].Seq, log[i].Seq)
		}
	}
	return nil
}
