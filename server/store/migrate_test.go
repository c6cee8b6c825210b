package store

import (
	"context"
	"testing"
)

// Migration 5 rewrites payloads logged before it (as sent, or as jsonb's
// text with spaces) into canonical JSON, and leaves canonical ones alone.
func TestMigrateCanonicalPayloads(t *testing.T) {
	st, dev, page := setup(t)
	ctx := context.Background()
	mustSubmit(t, st, dev, env(page, "create-after", map[string]any{"node": "n1", "text": "a<b>&c"}))
	pool := st.Pool()
	if _, err := pool.Exec(ctx, `UPDATE command_log SET payload = '{ "text": "a\u003cb\u003e\u0026c", "node": "n1" }'::json
		WHERE page_id = $1 AND seq = 2`, page); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM schema_migrations WHERE version = 5`); err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	rows := map[int64]string{}
	r, err := pool.Query(ctx, `SELECT seq, payload::text FROM command_log WHERE page_id = $1 ORDER BY seq`, page)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var seq int64
		var p string
		if err := r.Scan(&seq, &p); err != nil {
			t.Fatal(err)
		}
		rows[seq] = p
	}
	r.Close()
	if want := `{"node":"n1","text":"a<b>&c"}`; rows[2] != want {
		t.Errorf("seq 2 after migration 5: %s, want %s", rows[2], want)
	}
	if want := `{"title":"Budget"}`; rows[1] != want {
		t.Errorf("seq 1 after migration 5: %s, want %s", rows[1], want)
	}
}
