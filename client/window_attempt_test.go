package client_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/kbcore"
)

// attempts is a WindowObserver that keeps the window's kb.command calls.
type attempts struct {
	client.NopObserver
	mu  sync.Mutex
	all []client.Attempt
}

func (a *attempts) Attempt(x client.Attempt) { a.mu.Lock(); a.all = append(a.all, x); a.mu.Unlock() }

func (a *attempts) list() []client.Attempt {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]client.Attempt(nil), a.all...)
}

// TestWindowReportsAttempts: the observer sees each kb.command call of a
// command with its times: one committed call with its seq while the
// server is up; once it is down, the failed calls, paced by the window's
// Backoff (none cut short: the window gives up during a pause rather than
// call again with an ended context), the command then rolled back.
func TestWindowReportsAttempts(t *testing.T) {
	f := setup(t)
	obs := &attempts{}
	backoff := client.Doubling(40*time.Millisecond, 80*time.Millisecond)
	w := f.openWith(t, 0, client.WindowOptions{Observer: obs, AttemptTimeout: 2 * time.Second, Backoff: backoff})
	seq, rej := do(t, w, cmd(uuid.NewString(), kbcore.TypeEditText, map[string]any{"node": "n", "text": "up"}))
	if rej != nil {
		t.Fatal(rej)
	}
	got := obs.list()
	if len(got) != 1 || !got[0].Committed() || got[0].Ack.Seq != seq || got[0].Ack.Duplicate || got[0].Abandoned ||
		got[0].To.Before(got[0].From) || got[0].Env.PageID != f.page {
		t.Fatalf("one committed attempt at seq %d, got %+v", seq, got)
	}

	converge(t, w, seq)
	f.stop()
	env, _, ok := w.Local(func(kbcore.Doc) kbcore.Command {
		return cmd(uuid.NewString(), kbcore.TypeEditText, map[string]any{"node": "n", "text": "down"})
	})
	if !ok {
		t.Fatal("the window refused the edit")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 800*time.Millisecond)
	defer cancel()
	if _, rej, err := w.Send(ctx, env); err == nil || rej != nil {
		t.Fatalf("a command sent to a stopped server: err %v, rejection %v", err, rej)
	}
	down := obs.list()[1:]
	if len(down) < 3 {
		t.Fatalf("%d attempts in 800 ms with pauses of 40 to 80 ms", len(down))
	}
	for i, a := range down {
		if a.Env.ID != env.ID || a.Err == nil || a.Committed() {
			t.Fatalf("attempt %d: %+v", i, a)
		}
		if a.Abandoned && i < len(down)-1 {
			t.Fatalf("attempt %d of %d abandoned, and yet retried", i, len(down))
		}
		if i > 0 {
			if gap, want := a.From.Sub(down[i-1].To), backoff(i-1); gap < want-5*time.Millisecond {
				t.Fatalf("attempt %d began %s after the previous, want the backoff %s", i, gap, want)
			}
		}
	}
	if ids, _ := w.Pending(); len(ids) != 0 {
		t.Fatalf("pending after the caller gave up: %v", ids)
	}
}

// TestWindowReopen: a window reopens (its undo history forgotten, its
// document and seq kept) only when nothing is pending.
func TestWindowReopen(t *testing.T) {
	f := setup(t)
	w := f.open(t, 0, nil)
	seq, _ := do(t, w, cmd(uuid.NewString(), kbcore.TypeEditText, map[string]any{"node": "n", "text": "typed"}))
	converge(t, w, seq)
	id := uuid.NewString()
	env, _, ok := w.Local(func(kbcore.Doc) kbcore.Command {
		return cmd(id, kbcore.TypeEditText, map[string]any{"node": "n", "text": "more"})
	})
	if !ok {
		t.Fatal("refused")
	}
	if ids, _ := w.Pending(); len(ids) != 1 || ids[0] != id {
		t.Fatalf("pending %v, want [%s]", ids, id)
	}
	if w.Reopen() {
		t.Fatal("reopened with a command pending")
	}
	if _, rej, err := w.Send(context.Background(), env); err != nil || rej != nil {
		t.Fatal(err, rej)
	}
	converge(t, w, seq+1)
	if !w.Reopen() {
		t.Fatal("not reopened with nothing pending")
	}
	if doc, s := w.Server(); s != seq+1 || text(t, doc, "n") != "more" {
		t.Fatalf("reopened at seq %d with %q", s, text(t, doc, "n"))
	}
	if envs, code := w.Undo([]string{uuid.NewString()}); len(envs) != 0 || code != kbcore.ToastNothingToUndo {
		t.Fatalf("undo after a reopen: %d commands, %q", len(envs), code)
	}
}

func TestDoubling(t *testing.T) {
	b := client.Doubling(50*time.Millisecond, 400*time.Millisecond)
	want := []time.Duration{50, 100, 200, 400, 400, 400}
	for i, w := range want {
		if got := b(i); got != w*time.Millisecond {
			t.Errorf("attempt %d: %s, want %s", i, got, w*time.Millisecond)
		}
	}
}
