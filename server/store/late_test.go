package store

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// A group's commit hooks wait for the next transaction to be sent, or for
// the group's end when none follows (round, runLate): every commit
// reaches the hooks once, a page's in seq order, and none is left behind
// once the load stops. Closed writers, two per page and four on one.
func TestLateHooks(t *testing.T) {
	st, dev, first := setup(t)
	pages := []string{first}
	for i := 1; i < 4; i++ {
		p := uuid.NewString()
		mustSubmit(t, st, dev, env(p, "create-page", map[string]any{"title": fmt.Sprint("Late ", i)}))
		pages = append(pages, p)
	}
	last := map[string]int64{}
	for _, p := range pages {
		last[p] = mustSubmit(t, st, dev, env(p, "create-after", map[string]any{"text": "", "node": "n"})).Seq
	}

	var mu sync.Mutex
	var disorder []string
	var hooked atomic.Int64
	st.OnCommit(func(p string, es []Entry) {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range es {
			if e.Seq != last[p]+1 {
				disorder = append(disorder, fmt.Sprintf("page %s: seq %d after %d", p, e.Seq, last[p]))
			}
			last[p] = e.Seq
		}
		hooked.Add(int64(len(es)))
	})
	var groups, waited atomic.Int64
	st.groupHook = func(int, *pgx.Batch) error {
		groups.Add(1)
		st.lateMu.Lock()
		if len(st.late) > 0 {
			waited.Add(1)
		}
		st.lateMu.Unlock()
		return nil
	}

	const writers, each = 12, 40
	var committed atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			page := pages[min(w/2, len(pages)-1)] // 0-1, 2-3, 4-5, then 6-11 on the last
			for i := range each {
				e := env(page, "edit-text", map[string]any{"node": "n", "text": fmt.Sprintf("w%d %d", w, i)})
				e.DeviceID = dev.DeviceID
				out, err := st.Submit(context.Background(), dev, e)
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				if out.Seq > 0 {
					committed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	for deadline := time.Now().Add(time.Minute); hooked.Load() < committed.Load(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d commits never reached the hooks", committed.Load()-hooked.Load(), committed.Load())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(disorder) > 0 {
		t.Fatalf("%d entries out of order, the first: %s", len(disorder), disorder[0])
	}
	if got := hooked.Load(); got != committed.Load() || got != writers*each {
		t.Fatalf("hooked %d entries, committed %d, of %d commands", got, committed.Load(), writers*each)
	}
	if waited.Load() == 0 {
		t.Fatalf("none of %d group transactions found the hooks of the group before waiting: they ran before it was sent", groups.Load())
	}
	t.Logf("%d group transactions, %d sent with the hooks of the one before waiting", groups.Load(), waited.Load())
}

// The late hooks run inside the next group's round trip (runLate, after
// its send): their time is neither the transaction's nor its wait for
// Postgres (kbkit_store_transaction_seconds_total,
// kbkit_store_postgres_seconds_total). Hooks that take 10 ms each would
// otherwise be most of both.
func TestLateHooksOutsideTheWaits(t *testing.T) {
	st, dev, page := setup(t)
	mustSubmit(t, st, dev, env(page, "create-after", map[string]any{"text": "", "node": "n"}))
	var slept atomic.Int64
	st.OnCommit(func(string, []Entry) {
		t0 := time.Now()
		time.Sleep(10 * time.Millisecond)
		slept.Add(int64(time.Since(t0)))
	})
	before := st.Waits()
	const writers, each = 8, 30
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				mustSubmit(t, st, dev, env(page, "edit-text", map[string]any{"node": "n", "text": fmt.Sprintf("w%d %d", w, i)}))
			}
		})
	}
	wg.Wait()
	waitGroupsEnded(t, st)
	w := st.Waits()
	var tx float64
	for p := range numPaths {
		tx += w.TxSeconds[p] - before.TxSeconds[p]
	}
	pg := w.PostgresSeconds - before.PostgresSeconds
	hooks := time.Duration(slept.Load()).Seconds()
	t.Logf("hooks %.3fs; transactions %.3fs, waiting for Postgres %.3fs", hooks, tx, pg)
	if hooks < 0.15 {
		t.Fatalf("the hooks slept %.3fs in all: too few groups to tell", hooks)
	}
	if tx > hooks/2 || pg > hooks/2 {
		t.Fatalf("transactions %.3fs and their wait for Postgres %.3fs count the late hooks' %.3fs", tx, pg, hooks)
	}
}
