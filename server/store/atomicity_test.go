package store

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// TestNoReaderSeesHalfARename renames a page back and forth while readers,
// each in one snapshot, read its title and a referring node: the node must
// always link to the title the page has in that snapshot.
func TestNoReaderSeesHalfARename(t *testing.T) {
	st, dev, target := setup(t) // a page titled "Budget"
	ctx := context.Background()
	ref := uuid.NewString()
	mustSubmit(t, st, dev, env(ref, "create-page", map[string]any{"title": "Notes"}))
	mustSubmit(t, st, dev, env(ref, "create-after", map[string]any{"node": "n", "text": "see [[Budget]] and #Budget"}))

	const renames = 40
	var stop atomic.Bool
	var reads atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				err := pgx.BeginTxFunc(ctx, st.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
					var title, text string
					if err := tx.QueryRow(ctx, `SELECT title FROM pages WHERE id = $1`, target).Scan(&title); err != nil {
						return err
					}
					if err := tx.QueryRow(ctx, `SELECT text FROM nodes WHERE page_id = $1 AND id = 'n'`, ref).Scan(&text); err != nil {
						return err
					}
					if want := "see [[" + title + "]] and #" + title; text != want {
						return fmt.Errorf("half a rename: page titled %q but the referring node says %q", title, text)
					}
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
				reads.Add(1)
			}
		}()
	}
	for i := 0; i < renames; i++ {
		title := fmt.Sprintf("Budget%d", i)
		out := mustSubmit(t, st, dev, env(target, "rename-page", map[string]any{"title": title, "aliases": []string{}}))
		if out.Rejected != nil {
			t.Fatalf("rename %d: %v", i, out.Rejected)
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if reads.Load() == 0 {
		t.Fatal("no read overlapped the renames")
	}
	t.Logf("%d consistent reads during %d renames", reads.Load(), renames)
	checkProjection(t, st, ref)
}

// TestNoReaderSeesHalfAMerge merges pages while readers check, in one
// snapshot, that a merged page's nodes are on its target and nowhere else.
func TestNoReaderSeesHalfAMerge(t *testing.T) {
	st, dev, into := setup(t)
	ctx := context.Background()
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	var checked atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			err := pgx.BeginTxFunc(ctx, st.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
				// Every node id lives on exactly one live page, and a merged
				// page has no nodes.
				rows, err := tx.Query(ctx, `SELECT n.id, count(*) FROM nodes n JOIN pages p ON p.id = n.page_id
					WHERE p.workspace_id = $1 GROUP BY n.id HAVING count(*) > 1
					UNION ALL SELECT n.id, 1 FROM nodes n JOIN pages p ON p.id = n.page_id
					WHERE p.workspace_id = $1 AND p.merged_into IS NOT NULL`, dev.WorkspaceID)
				if err != nil {
					return err
				}
				defer rows.Close()
				for rows.Next() {
					var id string
					var n int
					if err := rows.Scan(&id, &n); err != nil {
						return err
					}
					return fmt.Errorf("half a merge: node %s is on %d pages or on a merged page", id, n)
				}
				checked.Add(1)
				return rows.Err()
			})
			if err != nil {
				errs <- err
				return
			}
		}
	}()
	for i := 0; i < 15; i++ {
		src := uuid.NewString()
		mustSubmit(t, st, dev, env(src, "create-page", map[string]any{"title": fmt.Sprintf("Src %d", i)}))
		for j := 0; j < 3; j++ {
			mustSubmit(t, st, dev, env(src, "create-after", map[string]any{"node": fmt.Sprintf("s%d-%d", i, j), "text": "x"}))
		}
		out := mustSubmit(t, st, dev, env(src, "merge-page", map[string]any{"into": into}))
		if out.Rejected != nil {
			t.Fatalf("merge %d: %v", i, out.Rejected)
		}
		checkProjection(t, st, src)
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	snap, err := st.Page(ctx, dev, into, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := snap.Doc.Len(); got != 45 {
		t.Fatalf("target has %d nodes, want 45", got)
	}
	if a := snap.Doc.Page().Aliases; len(a) != 15 || !strings.HasPrefix(a[0], "Src ") {
		t.Fatalf("target aliases %v", a)
	}
	checkProjection(t, st, into)
	t.Logf("%d consistent snapshots during 15 merges", checked.Load())
}
