package store

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/subspace/kbkit/kbcore"
)

func pair(t *testing.T, st *Store, ws string) Device {
	t.Helper()
	pd, err := st.PairDevice(context.Background(), ws)
	if err != nil {
		t.Fatal(err)
	}
	return pd.Device
}

// A command id tells nothing across workspaces: B's command with an id
// decided in A is decided on its own (spec/PROTOCOL.md section 4.1).
func TestDedupIsPerWorkspace(t *testing.T) {
	st := newStore(t)
	a, b := pair(t, st, "a"), pair(t, st, "b")
	pa, pb := uuid.NewString(), uuid.NewString()
	mustSubmit(t, st, a, env(pa, "create-page", map[string]any{"title": "A secret"}))
	mustSubmit(t, st, b, env(pb, "create-page", map[string]any{"title": "B page"}))
	mustSubmit(t, st, a, env(pa, "create-after", map[string]any{"node": "n1", "text": "one"}))

	committed := env(pa, "create-after", map[string]any{"node": "n2", "text": "two"})
	if out := mustSubmit(t, st, a, committed); out.Seq != 3 || out.Duplicate {
		t.Fatalf("A's command: %+v", out)
	}
	rejected := env(pa, "indent", map[string]any{"node": "nope"})
	if out := mustSubmit(t, st, a, rejected); out.Rejected == nil {
		t.Fatalf("A's bad command: %+v", out)
	}

	// B replays both ids on its own page: each is B's own new command.
	replay := env(pb, "create-after", map[string]any{"node": "m1", "text": "b"})
	replay.ID = committed.ID
	if out := mustSubmit(t, st, b, replay); out.Seq != 2 || out.Duplicate || out.Rejected != nil {
		t.Fatalf("B's command with A's committed id: %+v, want seq 2, fresh", out)
	}
	replay2 := env(pb, "create-after", map[string]any{"node": "m2", "text": "b"})
	replay2.ID = rejected.ID
	if out := mustSubmit(t, st, b, replay2); out.Seq != 3 || out.Rejected != nil {
		t.Fatalf("B's command with A's rejected id: %+v, want seq 3", out)
	}
	d, _ := fold(t, st, pb)
	if _, ok := d.Node("m2"); !ok {
		t.Fatal("B's command was acknowledged but not applied")
	}
	// B's id replayed on A's page is still a page of another workspace.
	replay3 := env(pa, "create-after", map[string]any{"node": "x", "text": "b"})
	replay3.ID = uuid.NewString()
	replay3.DeviceID = b.DeviceID
	if _, err := st.Submit(context.Background(), b, replay3); !errors.Is(err, ErrForbidden) {
		t.Fatalf("B on A's page: %v, want ErrForbidden", err)
	}
	// A's retry still gets A's original outcomes.
	if out := mustSubmit(t, st, a, committed); out.Seq != 3 || !out.Duplicate {
		t.Fatalf("A's retry: %+v", out)
	}
	// kb.page's outcomes are per workspace too.
	snap, err := st.Page(context.Background(), b, pb, []string{committed.ID})
	if err != nil {
		t.Fatal(err)
	}
	if o := snap.Outcomes[committed.ID]; o.Seq != 2 {
		t.Fatalf("B's outcome of the shared id: %+v", o)
	}
}

// Within a workspace, an id reused by another device or for another page
// is rejected id-reused, reveals nothing, writes nothing, and the first
// use keeps the id.
func TestIDReusedWithinWorkspace(t *testing.T) {
	st := newStore(t)
	a1, a2 := pair(t, st, "a"), pair(t, st, "a")
	p1, p2 := uuid.NewString(), uuid.NewString()
	mustSubmit(t, st, a1, env(p1, "create-page", map[string]any{"title": "One"}))
	mustSubmit(t, st, a1, env(p2, "create-page", map[string]any{"title": "Two"}))
	first := env(p1, "create-after", map[string]any{"node": "n1", "text": "secret"})
	mustSubmit(t, st, a1, first)

	other := first
	if out := mustSubmit(t, st, a2, other); out.Rejected == nil || out.Rejected.Code != RejectIDReused {
		t.Fatalf("same id from another device: %+v", out)
	} else if strings.Contains(out.Rejected.Message, "secret") || strings.Contains(out.Rejected.Message, p1) {
		t.Fatalf("id-reused message reveals the first use: %q", out.Rejected.Message)
	}
	moved := env(p2, "create-after", map[string]any{"node": "n1", "text": "x"})
	moved.ID = first.ID
	if out := mustSubmit(t, st, a1, moved); out.Rejected == nil || out.Rejected.Code != RejectIDReused {
		t.Fatalf("same id for another page: %+v", out)
	}
	if _, seq := fold(t, st, p2); seq != 1 {
		t.Fatalf("id-reused wrote to page 2 (seq %d)", seq)
	}
	if out := mustSubmit(t, st, a1, first); out.Seq != 2 || !out.Duplicate {
		t.Fatalf("the first device's retry: %+v", out)
	}
}

// The same rule holds in a group transaction: concurrent commands of one
// page, half of them reusing the other device's ids.
func TestIDReusedInGroups(t *testing.T) {
	st := newStore(t)
	a1, a2 := pair(t, st, "a"), pair(t, st, "a")
	page := uuid.NewString()
	mustSubmit(t, st, a1, env(page, "create-page", map[string]any{"title": "P"}))
	const n = 40
	envs := make([]kbcore.Envelope, n)
	for i := range envs {
		envs[i] = env(page, "create-after", map[string]any{"node": uuid.NewString()[:8], "text": "x"})
		envs[i].DeviceID = a1.DeviceID
		if _, err := st.Submit(context.Background(), a1, envs[i]); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	outs := make([]Outcome, 2*n)
	errs := make([]error, 2*n)
	for i := 0; i < 2*n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			dev := a1
			e := envs[i/2]
			if i%2 == 1 {
				dev = a2
				e.DeviceID = a2.DeviceID
			}
			outs[i], errs[i] = st.Submit(context.Background(), dev, e)
		}(i)
	}
	wg.Wait()
	for i := range outs {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		if i%2 == 0 && (!outs[i].Duplicate || outs[i].Seq == 0) {
			t.Fatalf("retry by the sender %d: %+v", i, outs[i])
		}
		if i%2 == 1 && (outs[i].Rejected == nil || outs[i].Rejected.Code != RejectIDReused) {
			t.Fatalf("reuse by another device %d: %+v", i, outs[i])
		}
	}
	if _, seq := fold(t, st, page); seq != n+1 {
		t.Fatalf("page seq %d, want %d", seq, n+1)
	}
}

func noise(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawStdEncoding.EncodeToString(b)[:n]
}

// Every text the protocol accepts is storable: long incompressible
// titles, aliases and link titles (a btree row holds ~2.7 KB) commit.
func TestLongTextsAreStorable(t *testing.T) {
	st, dev, page := setup(t)
	long := noise(20000)
	p := uuid.NewString()
	if out := mustSubmit(t, st, dev, env(p, "create-page", map[string]any{"title": long})); out.Seq != 1 {
		t.Fatalf("long title: %+v", out)
	}
	if out := mustSubmit(t, st, dev, env(p, "set-aliases", map[string]any{"aliases": []string{noise(20000)}})); out.Seq != 2 {
		t.Fatalf("long alias: %+v", out)
	}
	text := "see [[" + noise(30000) + "]] and #" + noise(5000) + " and [[" + long + "]]"
	if out := mustSubmit(t, st, dev, env(page, "create-after", map[string]any{"node": "n1", "text": text})); out.Seq == 0 || out.Rejected != nil {
		t.Fatalf("long links: %+v", out)
	}
	dup := env(uuid.NewString(), "create-page", map[string]any{"title": long})
	if out := mustSubmit(t, st, dev, dup); out.Rejected == nil {
		t.Fatalf("a second page with the long title: %+v, want a rejection", out)
	}
	checkProjection(t, st, page)
}

// Text the database cannot hold (NUL) is ErrInvalidData: not retryable,
// nothing written. The wire refuses it before (spec/PROTOCOL.md 7); the
// store stays safe when called directly.
func TestDataErrorsAreNotRetryable(t *testing.T) {
	st, dev, page := setup(t)
	e := env(page, "create-after", map[string]any{"node": "n1", "text": "a\u0000b"})
	e.DeviceID = dev.DeviceID
	_, err := st.Submit(context.Background(), dev, e)
	if !errors.Is(err, ErrInvalidData) || IsRetryable(err) {
		t.Fatalf("NUL in text: %v, want ErrInvalidData, not retryable", err)
	}
	if _, seq := fold(t, st, page); seq != 1 {
		t.Fatalf("a refused command wrote (seq %d)", seq)
	}
}
