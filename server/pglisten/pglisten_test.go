package pglisten

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/subspace/kbkit/server/pgprovider"
)

func TestMain(m *testing.M) { os.Exit(pgprovider.RunTests(m)) }

// recorder is a Handler that records what it is told.
type recorder struct {
	mu       sync.Mutex
	backlogs int
	losts    int
	notes    []string
	changed  chan struct{}
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{}, 100)} }

func (r *recorder) Backlog(context.Context) error {
	r.mu.Lock()
	r.backlogs++
	r.mu.Unlock()
	r.changed <- struct{}{}
	return nil
}

func (r *recorder) Notify(n *pgconn.Notification) {
	r.mu.Lock()
	r.notes = append(r.notes, n.Channel+"="+n.Payload)
	r.mu.Unlock()
	r.changed <- struct{}{}
}

func (r *recorder) Lost(error) {
	r.mu.Lock()
	r.losts++
	r.mu.Unlock()
	r.changed <- struct{}{}
}

func (r *recorder) await(t *testing.T, what string, ok func(r *recorder) bool) {
	t.Helper()
	deadline := time.After(time.Minute) // a hang detector: a busy machine is slow, not stuck
	for {
		r.mu.Lock()
		done := ok(r)
		r.mu.Unlock()
		if done {
			return
		}
		select {
		case <-r.changed:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// One connection serves every channel: a handler added while it runs is
// listened for at once and gets its backlog first; after the connection
// is killed every handler is told Lost, then Backlog again, and
// notifications flow again.
func TestOneConnectionManyHandlers(t *testing.T) {
	dsn := pgprovider.ForTest(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	l := New(func() *pgx.ConnConfig { return cfg.Copy() }, nil)
	a, b := newRecorder(), newRecorder()
	l.Handle(a, "kbkit_test_a")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	a.await(t, "a's first backlog", func(r *recorder) bool { return r.backlogs == 1 })

	admin, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	notify := func(ch, payload string) {
		t.Helper()
		if _, err := admin.Exec(context.Background(), "SELECT pg_notify($1, $2)", ch, payload); err != nil {
			t.Fatal(err)
		}
	}
	notify("kbkit_test_a", "1")
	a.await(t, "a's notification", func(r *recorder) bool { return len(r.notes) == 1 })

	l.Handle(b, "kbkit_test_b", "kbkit_test_c")
	b.await(t, "b's backlog", func(r *recorder) bool { return r.backlogs == 1 })
	notify("kbkit_test_c", "2")
	notify("kbkit_test_a", "3")
	b.await(t, "b's notification", func(r *recorder) bool { return len(r.notes) == 1 })
	a.await(t, "a's second notification", func(r *recorder) bool { return len(r.notes) == 2 })
	a.mu.Lock()
	if a.backlogs != 1 {
		t.Errorf("adding b ran a's backlog again (%d)", a.backlogs)
	}
	a.mu.Unlock()

	var n int
	if err := admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, AppName).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d LISTEN connections (%v), want 1", n, err)
	}
	if _, err := admin.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, AppName); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*recorder{a, b} {
		r.await(t, "lost, then a backlog again", func(r *recorder) bool { return r.losts >= 1 && r.backlogs >= 2 })
	}
	notify("kbkit_test_b", "4")
	b.await(t, "a notification after the reconnect", func(r *recorder) bool { return len(r.notes) == 2 })
	b.mu.Lock()
	defer b.mu.Unlock()
	if got := b.notes; got[0] != "kbkit_test_c=2" || got[1] != "kbkit_test_b=4" {
		t.Errorf("b was told %v", got)
	}
}
