package store

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/server/pgprovider"
)

// pagesScenario queues commands of three pages (and two workspaces) behind
// a held page lock with one transaction slot, so that the slot's next
// transaction groups commands of every page; mode "alone" decides them one
// at a time in the same order instead. It returns the results, each page's
// log and document.
func pagesScenario(t *testing.T, mode string) ([]result, map[string][]Entry, map[string]kbcore.Doc, Stats) {
	t.Helper()
	ctx := context.Background()
	st := newStore(t)
	st.groupTx = 1
	pd, err := st.PairDevice(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	od, err := st.PairDevice(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	dev, other := pd.Device, od.Device
	id := func(s string) string { return uuid.NewSHA1(uuid.NameSpaceOID, []byte("pages-"+s)).String() }
	pages := []string{id("page-a"), id("page-b"), id("page-c")}
	a, b, c := pages[0], pages[1], pages[2]
	mk := func(d Device, name, page, typ string, payload any) call {
		e := env(page, typ, payload)
		e.ID, e.DeviceID = id(name), d.DeviceID
		return call{d, e}
	}
	for i, p := range pages {
		d := dev
		if p == c {
			d = other // page c is of the other workspace
		}
		for _, cl := range []call{
			mk(d, fmt.Sprint("create-", i), p, "create-page", map[string]any{"title": fmt.Sprint("Page ", i)}),
			mk(d, fmt.Sprint("n-", i), p, "create-after", map[string]any{"node": "n", "text": ""}),
		} {
			mustSubmit(t, st, cl.dev, cl.env)
		}
	}
	calls := []call{
		mk(dev, "0", a, "edit-text", map[string]any{"node": "n", "text": "a0"}),                              // alone: blocked on a's lock
		mk(dev, "1", b, "edit-text", map[string]any{"node": "n", "text": "b1 [[Page 0]]"}),                   // group: b
		mk(other, "2", c, "create-after", map[string]any{"after": "n", "node": "x", "text": "c2"}),           // c, another workspace
		mk(dev, "3", a, "create-after", map[string]any{"after": "n", "node": "y", "text": "a3 #tag"}),        // a again
		mk(dev, "4", b, "edit-text", map[string]any{"node": "ghost", "text": "x"}),                           // rejected
		mk(other, "5", c, "edit-text", map[string]any{"node": "x", "text": "c5"}),                            // needs 2 in the same group
		mk(dev, "0", a, "edit-text", map[string]any{"node": "n", "text": "a0"}),                              // retry of a committed id
		mk(dev, "7", c, "edit-text", map[string]any{"node": "n", "text": "intruder"}),                        // forbidden (c is other's)
		mk(other, "1", c, "edit-text", map[string]any{"node": "n", "text": "reuse"}),                         // an id of another workspace: its own
		mk(dev, "4", b, "edit-text", map[string]any{"node": "ghost", "text": "x"}),                           // retried rejection
		mk(dev, "3", b, "edit-text", map[string]any{"node": "n", "text": "id of a"}),                         // id-reused (another page)
		mk(dev, "11", b, "create-after", map[string]any{"after": "n", "node": "z", "text": "see [[Fresh]]"}), // ends the group: a new page
		mk(dev, "12", a, "edit-text", map[string]any{"node": "y", "text": "a12 [[Fresh]]"}),                  // next group
		mk(other, "13", c, "delete", map[string]any{"node": "x"}),
		mk(dev, "14", b, "indent", map[string]any{"node": "z"}),
	}
	if mode == "failing" {
		st.groupHook = func(n int, b *pgx.Batch) error {
			b.Queue(`SELECT 1/0`) // fails after every write of the group
			return nil
		}
	}
	results := make([]result, len(calls))
	submit := func(i int) {
		out, err := st.Submit(ctx, calls[i].dev, calls[i].env)
		results[i].Out = out
		if err != nil {
			results[i].Err = err.Error()
		}
	}
	if mode == "alone" {
		st.groupMax = 0
		for i := range calls {
			submit(i)
		}
	} else {
		release := holdPage(t, st, a)
		var wg sync.WaitGroup
		for i := range calls {
			wg.Go(func() { submit(i) })
			// The first runs alone (blocked on a's lock) in the only slot;
			// the rest queue in order.
			waitFor(t, fmt.Sprintf("command %d queued", i), func() bool {
				st.groups.mu.Lock()
				defer st.groups.mu.Unlock()
				return st.groups.running == 1 && len(st.groups.queue) == i
			})
		}
		release()
		wg.Wait()
	}
	logs := map[string][]Entry{}
	docs := map[string]kbcore.Doc{}
	for i, p := range pages {
		log, err := st.Log(ctx, p, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for j := range log {
			log[j].DeviceID = "" // device ids differ between the databases
		}
		logs[fmt.Sprint("page ", i)] = log
		checkProjection(t, st, p)
		checkIndex(t, st, p)
		if docs[fmt.Sprint("page ", i)], err = loadDoc(ctx, st.pool, p); err != nil {
			t.Fatal(err)
		}
	}
	return results, logs, docs, st.Stats()
}

type call struct {
	dev Device
	env kbcore.Envelope
}

// TestGroupCommitAcrossPages: commands of different pages (and
// workspaces) queued while a transaction runs share one transaction, each
// with its page's seq and its own outcome; the same queue with every group
// transaction failing (each command then decided alone) and without group
// commit gives the same outcomes, logs and documents.
func TestGroupCommitAcrossPages(t *testing.T) {
	modes := []string{"grouped", "failing", "alone"}
	var (
		results [3][]result
		logs    [3]map[string][]Entry
		docs    [3]map[string]kbcore.Doc
		stats   [3]Stats
	)
	for i, m := range modes {
		results[i], logs[i], docs[i], stats[i] = pagesScenario(t, m)
	}
	for i := range results[0] {
		t.Logf("%2d %s", i, results[0][i])
	}
	t.Logf("stats: grouped %+v, failing %+v, alone %+v", stats[0], stats[1], stats[2])
	if stats[0].MultiPageBatches < 1 || stats[0].BatchFailures != 0 || stats[0].BatchedCommands < 8 {
		t.Fatalf("grouped run formed no batch across pages: %+v", stats[0])
	}
	if stats[1].Batches != 0 || stats[1].BatchFailures == 0 {
		t.Fatalf("failing run: %+v", stats[1])
	}
	if stats[2] != (Stats{}) {
		t.Fatalf("run without group commit: %+v", stats[2])
	}
	for i := 1; i < 3; i++ {
		for j := range results[0] {
			a, b := results[0][j], results[i][j]
			if !reflect.DeepEqual(withoutLog(a.Out), withoutLog(b.Out)) || (a.Err == "") != (b.Err == "") {
				t.Fatalf("command %d: %s %s, %s %s", j, modes[0], a, modes[i], b)
			}
		}
		if !reflect.DeepEqual(logs[0], logs[i]) {
			t.Fatalf("logs differ between %s and %s:\n%+v\n%+v", modes[0], modes[i], logs[0], logs[i])
		}
		for p, d := range docs[0] {
			if !d.Equal(docs[i][p]) {
				t.Fatalf("%s differs between %s and %s", p, modes[0], modes[i])
			}
		}
	}
	r := results[0]
	for _, c := range []struct {
		i    int
		seq  int64
		code string
		dup  bool
		err  bool
	}{
		{0, 3, "", false, false}, {1, 3, "", false, false}, {2, 3, "", false, false}, {3, 4, "", false, false},
		{4, 0, "node-not-found", false, false}, {5, 4, "", false, false}, {6, 3, "", true, false},
		{7, 0, "", false, true}, {8, 5, "", false, false}, {9, 0, "node-not-found", true, false},
		{10, 0, RejectIDReused, false, false}, {11, 4, "", false, false}, {12, 5, "", false, false},
		{13, 6, "", false, false}, {14, 5, "", false, false},
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

// BenchmarkManyPages: 8 writers, each editing its own pages (64 in all), on
// a server with fsync and synchronous_commit on, with group commit off
// (one transaction per command) and on (across pages). Reports commands/s
// and transactions per command (xact_commit of the database: what
// PostgreSQL's per-transaction work and WAL flushes scale with).
func BenchmarkManyPages(b *testing.B) {
	const writers, pages = 8, 64
	ctx := context.Background()
	opts := pgprovider.OptionsFromEnv()
	opts.Fast = false
	srv, err := pgprovider.Start(ctx, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Stop(context.Background()) })
	for _, mode := range []struct {
		name              string
		groupMax, groupTx int
	}{{"group=off", 0, 0}, {"group=on/tx=1", defaultGroupMax, 1}, {"group=on/tx=2", defaultGroupMax, 2}, {"group=on/tx=4", defaultGroupMax, 4}} {
		dsn, drop, err := srv.NewDatabase(ctx, "")
		if err != nil {
			b.Fatal(err)
		}
		st, err := Open(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		st.groupMax, st.groupTx = mode.groupMax, mode.groupTx
		pd, err := st.PairDevice(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		dev := pd.Device
		ids := make([]string, pages)
		for i := range ids {
			ids[i] = uuid.NewString()
			for _, e := range []kbcore.Envelope{
				env(ids[i], "create-page", map[string]any{"title": "Many " + ids[i]}),
				env(ids[i], "create-after", map[string]any{"node": "n", "text": ""}),
			} {
				e.DeviceID = dev.DeviceID
				if out, err := st.Submit(ctx, dev, e); err != nil || out.Rejected != nil {
					b.Fatalf("setup: %+v %v", out, err)
				}
			}
		}
		xacts := func() int64 {
			var n int64
			if err := st.pool.QueryRow(ctx, `SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`).Scan(&n); err != nil {
				b.Fatal(err)
			}
			return n
		}
		b.Run(mode.name, func(b *testing.B) {
			var next atomic.Int64
			before := st.Stats()
			x0 := xacts()
			cm := cpuMeter{st: st}
			self0, pg0 := cm.self(), cm.backends(b)
			prev := runtime.GOMAXPROCS(writers)
			defer runtime.GOMAXPROCS(prev)
			b.SetParallelism(1)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				w := int(next.Add(1))
				for i := 0; pb.Next(); i++ {
					page := ids[(w+writers*i)%pages]
					e := env(page, "edit-text", map[string]any{"node": "n", "text": fmt.Sprintf("w%d %d", w, i)})
					e.DeviceID = dev.DeviceID
					if out, err := st.Submit(ctx, dev, e); err != nil || out.Rejected != nil {
						b.Errorf("submit: %+v %v", out, err)
						return
					}
				}
			})
			b.StopTimer()
			self1, pg1 := cm.self(), cm.backends(b)
			b.ReportMetric(float64((self1-self0).Microseconds())/float64(b.N), "go-µs/cmd")
			b.ReportMetric(float64((pg1-pg0).Microseconds())/float64(b.N), "pg-µs/cmd")
			// Stats are read after the counter settles (pg_stat is updated
			// when a backend goes idle).
			time.Sleep(600 * time.Millisecond)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cmds/s")
			b.ReportMetric(float64(xacts()-x0)/float64(b.N), "xacts/cmd")
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
