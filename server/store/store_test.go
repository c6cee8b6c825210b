package store

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/server/pgprovider"
)

func TestMain(m *testing.M) { os.Exit(pgprovider.RunTests(m)) }

func newStore(t *testing.T) *Store {
	t.Helper()
	st, err := Open(context.Background(), pgprovider.ForTest(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

func env(page, typ string, payload any) kbcore.Envelope {
	b, _ := json.Marshal(payload)
	return kbcore.Envelope{ID: uuid.NewString(), PageID: page, Type: typ, Payload: b}
}

func mustSubmit(t *testing.T, st *Store, dev Device, e kbcore.Envelope) Outcome {
	t.Helper()
	e.DeviceID = dev.DeviceID
	out, err := st.Submit(context.Background(), dev, e)
	if err != nil {
		t.Fatalf("submit %s: %v", e.Type, err)
	}
	return out
}

// submitAtOnce submits envs concurrently (so that they may form groups)
// and returns their outcomes in order; any error fails the test.
func submitAtOnce(t *testing.T, st *Store, dev Device, envs []kbcore.Envelope) []Outcome {
	t.Helper()
	outs := make([]Outcome, len(envs))
	errs := make([]error, len(envs))
	var wg sync.WaitGroup
	for i, e := range envs {
		wg.Go(func() {
			e.DeviceID = dev.DeviceID
			outs[i], errs[i] = st.Submit(context.Background(), dev, e)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("submit %s: %v", envs[i].Type, err)
		}
	}
	return outs
}

func setup(t *testing.T) (*Store, Device, string) {
	st := newStore(t)
	pd, err := st.PairDevice(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	page := uuid.NewString()
	if out := mustSubmit(t, st, pd.Device, env(page, "create-page", map[string]any{"title": "Budget"})); out.Seq != 1 {
		t.Fatalf("create-page: %+v", out)
	}
	return st, pd.Device, page
}

// fold rebuilds a page from its log with the reducer.
func fold(t *testing.T, st *Store, page string) (kbcore.Doc, int64) {
	t.Helper()
	entries, err := st.Log(context.Background(), page, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := kbcore.NewDoc(kbcore.Page{ID: page}, nil)
	for i, e := range entries {
		if e.Seq != int64(i+1) {
			t.Fatalf("log of %s has seq %d at position %d", page, e.Seq, i)
		}
		res := kbcore.Apply(d, e.Cmd)
		if res.Rejected != nil {
			t.Fatalf("log entry %d (%s) does not apply: %s", e.Seq, e.Cmd.Type, res.Rejected.Message)
		}
		d = res.Doc
	}
	return d, int64(len(entries))
}

func checkProjection(t *testing.T, st *Store, page string) {
	t.Helper()
	want, n := fold(t, st, page)
	got, err := loadDoc(context.Background(), st.pool, page)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(want) {
		a, _ := want.MarshalJSON()
		b, _ := got.MarshalJSON()
		t.Fatalf("projection of %s differs from the fold of its %d commands:\nfold %s\nrows %s", page, n, a, b)
	}
}

func TestDedupAndRejectionOnRetry(t *testing.T) {
	st, dev, page := setup(t)
	ctx := context.Background()
	create := env(page, "create-after", map[string]any{"text": "hello", "node": "n1"})
	first := mustSubmit(t, st, dev, create)
	again := mustSubmit(t, st, dev, create)
	if first.Seq != 2 || again.Seq != 2 || !again.Duplicate {
		t.Fatalf("retry of a committed id: first %+v, again %+v", first, again)
	}
	bad := env(page, "edit-text", map[string]any{"node": "ghost", "text": "x"})
	r1 := mustSubmit(t, st, dev, bad)
	// The page changes in between; the retry must still get the original answer.
	mustSubmit(t, st, dev, env(page, "create-after", map[string]any{"text": "ghost here", "node": "ghost"}))
	r2 := mustSubmit(t, st, dev, bad)
	if r1.Rejected == nil || r1.Rejected.Code != "node-not-found" || r2.Rejected == nil || r2.Rejected.Code != "node-not-found" || !r2.Duplicate {
		t.Fatalf("rejection on retry: %+v then %+v", r1, r2)
	}
	var n int
	if err := st.pool.QueryRow(ctx, `SELECT count(*) FROM command_log WHERE page_id = $1 AND outcome = 'committed'`, page).Scan(&n); err != nil || n != 3 {
		t.Fatalf("committed rows %d, %v", n, err)
	}
	snap, err := st.Page(ctx, dev, page, []string{create.ID, bad.ID, uuid.NewString()})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Seq != 3 || snap.Outcomes[create.ID].Seq != 2 || snap.Outcomes[bad.ID].Rejected == nil || len(snap.Outcomes) != 2 {
		t.Fatalf("snapshot %+v", snap)
	}
	checkProjection(t, st, page)
}

func TestGaplessSeqUnderConcurrentWriters(t *testing.T) {
	st, dev, page := setup(t)
	mustSubmit(t, st, dev, env(page, "create-after", map[string]any{"text": "", "node": "n"}))
	const writers, each = 8, 20
	var wg sync.WaitGroup
	seqs := make(chan int64, writers*each)
	errs := make(chan error, writers*each)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				e := env(page, "edit-text", map[string]any{"node": "n", "text": fmt.Sprintf("w%d-%d", w, i)})
				if i%2 == 0 {
					e = env(page, "create-after", map[string]any{"after": "n", "text": "x"})
				}
				e.DeviceID = dev.DeviceID
				out, err := st.Submit(context.Background(), dev, e)
				if err != nil {
					errs <- err
					return
				}
				seqs <- out.Seq
			}
		}(w)
	}
	wg.Wait()
	close(seqs)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for s := range seqs {
		if seen[s] {
			t.Fatalf("seq %d given twice", s)
		}
		seen[s] = true
	}
	for s := int64(3); s <= 2+writers*each; s++ {
		if !seen[s] {
			t.Fatalf("seq %d missing", s)
		}
	}
	checkProjection(t, st, page)
}

func TestTrustBoundary(t *testing.T) {
	st, dev, page := setup(t)
	ctx := context.Background()
	other, err := st.PairDevice(ctx, "other-workspace")
	if err != nil {
		t.Fatal(err)
	}
	count := func() int {
		var n int
		if err := st.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM command_log) + (SELECT count(*) FROM nodes) + (SELECT count(*) FROM pages)`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count()
	e := env(page, "create-after", map[string]any{"text": "intruder"})
	if _, err := st.Submit(ctx, other.Device, e); err != ErrForbidden {
		t.Fatalf("other workspace: %v", err)
	}
	if _, err := st.Submit(ctx, dev, env(uuid.NewString(), "create-after", map[string]any{"text": "x"})); err != ErrNotFound {
		t.Fatalf("unknown page: %v", err)
	}
	if _, err := st.Page(ctx, other.Device, page, nil); err != ErrForbidden {
		t.Fatalf("read from other workspace: %v", err)
	}
	if _, err := st.Authenticate(ctx, "nope"); err != ErrUnauthorized {
		t.Fatalf("bad token: %v", err)
	}
	if after := count(); after != before {
		t.Fatalf("refused commands wrote %d rows", after-before)
	}
}

func TestImplicitPagesAndRename(t *testing.T) {
	st, dev, page := setup(t)
	ctx := context.Background()
	mustSubmit(t, st, dev, env(page, "create-after", map[string]any{"text": "see [[Taxes]] and #taxes", "node": "n"}))
	taxes := kbcore.ImplicitPageID(dev.WorkspaceID, "Taxes")
	snap, err := st.Page(ctx, dev, taxes, nil)
	if err != nil {
		t.Fatalf("implicit page: %v", err)
	}
	if p := snap.Doc.Page(); p.Title != "Taxes" || p.Dir != kbcore.ImplicitDir {
		t.Fatalf("implicit page record %+v", p)
	}
	out := mustSubmit(t, st, dev, env(taxes, "rename-page", map[string]any{"title": "Tax 2026"}))
	if out.Rejected != nil {
		t.Fatal(out.Rejected)
	}
	snap, err = st.Page(ctx, dev, page, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := snap.Doc.Node("n")
	if n.Text != "see [[Tax 2026]] and #taxes" {
		t.Fatalf("rewritten text %q", n.Text)
	}
	// A title taken by another live page is refused by the planner.
	out = mustSubmit(t, st, dev, env(uuid.NewString(), "create-page", map[string]any{"title": "Tax 2026"}))
	if out.Rejected == nil || out.Rejected.Code != "title-taken" {
		t.Fatalf("duplicate title: %+v", out)
	}
	for _, p := range []string{page, taxes, kbcore.ImplicitPageID(dev.WorkspaceID, "taxes")} {
		checkProjection(t, st, p)
	}
}
