package store

import (
	"context"
	"fmt"
	"testing"
)

// Two instances (stores on one database) edit one page in turn: each
// one's cached head is stale whenever the other wrote last, so its
// optimistic transaction (one round trip, against the cached head) rolls
// back on the guard and the command is decided the usual way. Every
// command commits once, with consecutive seqs, a retry of an id answers
// its first outcome, and the log folds to each store's document.
func TestOptimisticGroupAcrossInstances(t *testing.T) {
	a, dev, page := setup(t)
	b := newStoreOn(t, a)
	ctx := context.Background()
	mustSubmit(t, a, dev, env(page, "create-after", map[string]any{"node": "n", "text": ""}))
	// Both caches hold the page (a wrote it, b reads it once).
	mustSubmit(t, b, dev, env(page, "edit-text", map[string]any{"node": "n", "text": "b0"}))
	mustSubmit(t, a, dev, env(page, "edit-text", map[string]any{"node": "n", "text": "a0"}))
	before := a.Stats().OptimisticConflicts + b.Stats().OptimisticConflicts
	want := int64(4)
	for i := 0; i < 20; i++ {
		st := []*Store{a, b}[i%2]
		e := env(page, "edit-text", map[string]any{"node": "n", "text": fmt.Sprint("edit ", i)})
		out := mustSubmit(t, st, dev, e)
		want++
		if out.Seq != want || out.Duplicate || out.Rejected != nil {
			t.Fatalf("edit %d: %+v, want seq %d", i, out, want)
		}
		// The same id again, through the other instance: its first outcome.
		e.DeviceID = dev.DeviceID
		again, err := []*Store{b, a}[i%2].Submit(ctx, dev, e)
		if err != nil || again.Seq != want || !again.Duplicate {
			t.Fatalf("retry of edit %d: %+v %v", i, again, err)
		}
	}
	if got := a.Stats().OptimisticConflicts + b.Stats().OptimisticConflicts - before; got == 0 {
		t.Fatal("no optimistic transaction met a stale head: the test did not test the guard")
	}
	d, n := fold(t, a, page)
	if n != want {
		t.Fatalf("log has %d commands, want %d", n, want)
	}
	for _, st := range []*Store{a, b} {
		snap, err := st.Page(ctx, dev, page, nil)
		if err != nil {
			t.Fatal(err)
		}
		if snap.Seq != want || !snap.Doc.Equal(d) {
			t.Fatalf("snapshot at seq %d differs from the fold of the log", snap.Seq)
		}
	}
}

// newStoreOn opens a second store (another instance) on st's database.
func newStoreOn(t *testing.T, st *Store) *Store {
	t.Helper()
	other, err := Open(context.Background(), st.pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	return other
}

// A command that the stale cached document of one instance would reject
// (its node was created through the other instance since) is decided
// against the database's head: the optimistic transaction, which writes
// only a rejection and no page, still checks the page's head and rolls
// back, and the command commits.
func TestOptimisticRejectionChecksTheHead(t *testing.T) {
	a, dev, page := setup(t)
	b := newStoreOn(t, a)
	mustSubmit(t, a, dev, env(page, "create-after", map[string]any{"node": "n", "text": ""}))
	// b caches the page now; a then adds a node b's cache does not have.
	mustSubmit(t, b, dev, env(page, "edit-text", map[string]any{"node": "n", "text": "b"}))
	mustSubmit(t, a, dev, env(page, "create-after", map[string]any{"after": "n", "node": "m", "text": ""}))
	before := b.Stats().OptimisticConflicts
	out := mustSubmit(t, b, dev, env(page, "edit-text", map[string]any{"node": "m", "text": "seen by b"}))
	if out.Rejected != nil || out.Seq != 5 {
		t.Fatalf("edit of the node created through the other instance: %+v, want seq 5", out)
	}
	if b.Stats().OptimisticConflicts == before {
		t.Fatal("b's transaction did not meet the stale head: the test did not test the guard")
	}
	checkProjection(t, b, page)
}
