package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subspace/kbkit/server/pglisten"

	"github.com/google/uuid"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/server/store"
)

func TestMain(m *testing.M) { os.Exit(pgprovider.RunTests(m)) }

// never is a poll interval that never fires in a test: delivery then
// depends on NOTIFY and the catch-up after (re)connect alone.
const never = time.Hour

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func openStore(t *testing.T, dsn string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

// startHub runs a hub until the end of the test.
func startHub(t *testing.T, h *Hub) *Hub {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Run returned %v", err)
			}
		case <-time.After(time.Minute): // a hang detector
			t.Error("Run did not return after cancel")
		}
	})
	return h
}

type writer struct {
	st  *store.Store
	dev store.Device
}

func newWriter(t *testing.T, st *store.Store) writer {
	t.Helper()
	pd, err := st.PairDevice(context.Background(), "w")
	if err != nil {
		t.Fatal(err)
	}
	return writer{st, pd.Device}
}

// submit commits one command, retrying transient failures.
func (w writer) submit(t testing.TB, page, typ string, payload any) int64 {
	b, _ := json.Marshal(payload)
	env := kbcore.Envelope{ID: uuid.NewString(), DeviceID: w.dev.DeviceID, PageID: page, Type: typ, Payload: b}
	for attempt := 0; ; attempt++ {
		out, err := w.st.Submit(context.Background(), w.dev, env)
		if err != nil && store.IsRetryable(err) && attempt < 20 {
			continue
		}
		if err != nil {
			t.Errorf("submit %s: %v", typ, err)
			return 0
		}
		if out.Rejected != nil {
			t.Errorf("submit %s: rejected %+v", typ, out.Rejected)
			return 0
		}
		return out.Seq
	}
}

// newPage creates a page with one text node "n": seqs 1 and 2.
func (w writer) newPage(t *testing.T) string {
	t.Helper()
	page := uuid.NewString()
	w.submit(t, page, "create-page", map[string]any{"title": "T " + page})
	w.submit(t, page, "create-after", map[string]any{"node": "n", "text": ""})
	return page
}

func (w writer) edit(t testing.TB, page, text string) int64 {
	return w.submit(t, page, "edit-text", map[string]any{"node": "n", "text": text})
}

// expect reads the events after..last from sub, failing on any gap,
// duplicate or reordering.
func expect(t *testing.T, sub *Subscription, after, last int64) []*Event {
	t.Helper()
	var got []*Event
	timeout := time.After(time.Minute) // a hang detector: a busy machine is slow, not stuck
	for next := after + 1; next <= last; next++ {
		select {
		case ev, ok := <-sub.C():
			if !ok {
				t.Fatalf("channel closed at seq %d (want up to %d): %v", next, last, sub.Err())
			}
			if ev.Seq != next {
				t.Fatalf("got seq %d, want %d", ev.Seq, next)
			}
			got = append(got, ev)
		case <-timeout:
			t.Fatalf("timeout waiting for seq %d (want up to %d)", next, last)
		}
	}
	return got
}

// expectNothing checks that sub delivers nothing for a while.
func expectNothing(t *testing.T, sub *Subscription, d time.Duration) {
	t.Helper()
	select {
	case ev, ok := <-sub.C():
		if ok {
			t.Fatalf("unexpected event seq %d", ev.Seq)
		}
		t.Fatalf("unexpected close: %v", sub.Err())
	case <-time.After(d):
	}
}

func subscribe(t *testing.T, h *Hub, page string, after int64) *Subscription {
	t.Helper()
	sub, err := h.Subscribe(context.Background(), page, after)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Close)
	return sub
}

// (1) replay of existing commands, then live ones, in order.
func TestReplayThenLive(t *testing.T) {
	st := openStore(t, pgprovider.ForTest(t))
	w := newWriter(t, st)
	page := w.newPage(t)
	for i := range 8 {
		w.edit(t, page, fmt.Sprint("e", i))
	}
	h := startHub(t, New(st, Logger(quiet), PollInterval(never)))
	sub := subscribe(t, h, page, 0)
	evs := expect(t, sub, 0, 10)
	if evs[0].Cmd.Type != "create-page" || evs[0].PageID != page || evs[1].Cmd.Type != "create-after" || evs[9].DeviceID != w.dev.DeviceID {
		t.Fatalf("replayed %+v / %+v", evs[0], evs[9])
	}
	for i := range 20 {
		if seq := w.edit(t, page, fmt.Sprint("live", i)); seq != int64(11+i) {
			t.Fatalf("seq %d", seq)
		}
	}
	evs = expect(t, sub, 10, 30)
	var p struct{ Text string }
	if err := json.Unmarshal(evs[19].Cmd.Payload, &p); err != nil || p.Text != "live19" {
		t.Fatalf("payload %s", evs[19].Cmd.Payload)
	}
	expectNothing(t, sub, 100*time.Millisecond)
	if n := h.Subscribers(); n != 1 {
		t.Fatalf("Subscribers = %d", n)
	}
	sub.Close()
	if _, ok := <-sub.C(); ok {
		t.Fatal("C open after Close")
	}
	if !errors.Is(sub.Err(), ErrClosed) || h.Subscribers() != 0 {
		t.Fatalf("after Close: err %v, subscribers %d", sub.Err(), h.Subscribers())
	}
}

// (2) two hubs (two server instances) on one database, writes through
// both, every subscriber of both hubs gets everything exactly once.
func TestTwoInstancesConverge(t *testing.T) {
	dsn := pgprovider.ForTest(t)
	st1, st2 := openStore(t, dsn), openStore(t, dsn)
	w1, w2 := newWriter(t, st1), newWriter(t, st2)
	page := w1.newPage(t)
	other := w2.newPage(t) // noise on another page
	h1 := startHub(t, New(st1, Logger(quiet), PollInterval(never)))
	h2 := startHub(t, New(st2, Logger(quiet), PollInterval(never)))

	const workers, each = 4, 25
	const last = 2 + workers*each
	var subs []*Subscription
	var afters []int64
	for _, h := range []*Hub{h1, h2} {
		for _, after := range []int64{0, 2, 1} {
			subs = append(subs, subscribe(t, h, page, after))
			afters = append(afters, after)
		}
	}
	otherSub := subscribe(t, h2, other, 2)

	var wg sync.WaitGroup
	var mid sync.WaitGroup
	mid.Add(1)
	for i := range workers {
		w := w1
		if i%2 == 1 {
			w = w2
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				if i == 0 && j == each/2 {
					mid.Done()
				}
				w.edit(t, page, fmt.Sprintf("w%d-%d", i, j))
				if j%5 == 0 {
					w.edit(t, other, fmt.Sprintf("o%d-%d", i, j))
				}
			}
		}()
	}
	// Late subscribers join while commands are being committed: their
	// replay races the live stream.
	mid.Wait()
	subs = append(subs, subscribe(t, h1, page, 0), subscribe(t, h2, page, 0))
	afters = append(afters, 0, 0)

	results := make([][]*Event, len(subs))
	var rg sync.WaitGroup
	for i, sub := range subs {
		rg.Add(1)
		go func() {
			defer rg.Done()
			var got []*Event
			timeout := time.After(30 * time.Second)
			for int64(len(got)) < last-afters[i] {
				select {
				case ev, ok := <-sub.C():
					if !ok && errors.Is(sub.Err(), ErrSlow) {
						// A burst (a group commit) outran the buffer: resume
						// after the last seq read, as the contract says.
						sub = subscribe(t, sub.h, page, afters[i]+int64(len(got)))
						subs[i] = sub // the exactly-once check below reads the live one
						continue
					}
					if !ok {
						t.Errorf("sub %d closed after %d events: %v", i, len(got), sub.Err())
						return
					}
					got = append(got, ev)
				case <-timeout:
					t.Errorf("sub %d: timeout after %d events", i, len(got))
					return
				}
			}
			results[i] = got
		}()
	}
	wg.Wait()
	rg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for i, got := range results {
		after := afters[i]
		for k, ev := range got {
			if ev.Seq != after+1+int64(k) || ev.PageID != page {
				t.Fatalf("sub %d: event %d has seq %d page %s", i, k, ev.Seq, ev.PageID)
			}
		}
	}
	// Nothing beyond: exactly once.
	for i, sub := range subs {
		select {
		case ev := <-sub.C():
			t.Fatalf("sub %d: extra event %d", i, ev.Seq)
		case <-time.After(20 * time.Millisecond):
		}
	}
	expect(t, otherSub, 2, 2+workers*each/5)
	if h1.Lag() != 0 || h2.Lag() != 0 {
		t.Errorf("lag %v %v after delivery", h1.Lag(), h2.Lag())
	}
}

// (3) resubscribing after N resumes exactly after N.
func TestResume(t *testing.T) {
	st := openStore(t, pgprovider.ForTest(t))
	w := newWriter(t, st)
	page := w.newPage(t)
	for i := range 10 {
		w.edit(t, page, fmt.Sprint(i))
	}
	h := startHub(t, New(st, Logger(quiet), PollInterval(never)))
	sub := subscribe(t, h, page, 0)
	expect(t, sub, 0, 7)
	sub.Close()

	for _, after := range []int64{7, 11, 12, 3} {
		sub := subscribe(t, h, page, after)
		expect(t, sub, after, 12)
		expectNothing(t, sub, 50*time.Millisecond)
		sub.Close()
	}
	// At the head: live only.
	sub = subscribe(t, h, page, 12)
	w.edit(t, page, "x")
	expect(t, sub, 12, 13)
	// Ahead of the head (the client's claim): events from after+1 only.
	ahead := subscribe(t, h, page, 15)
	for range 3 {
		w.edit(t, page, "y")
	}
	expect(t, sub, 13, 16)
	expect(t, ahead, 15, 16)
	// A page that does not exist yet.
	fresh := uuid.NewString()
	fs := subscribe(t, h, fresh, 0)
	w.submit(t, fresh, "create-page", map[string]any{"title": "Fresh " + fresh})
	if evs := expect(t, fs, 0, 1); evs[0].Cmd.Type != "create-page" {
		t.Fatalf("fresh page: %+v", evs[0])
	}
	if _, err := h.Subscribe(context.Background(), "not-a-uuid", 0); err == nil {
		t.Fatal("bad page id accepted")
	}
}

// (4) a subscriber that never reads gets ErrSlow and delays nobody.
func TestSlowSubscriber(t *testing.T) {
	st := openStore(t, pgprovider.ForTest(t))
	w := newWriter(t, st)
	page := w.newPage(t)
	h := startHub(t, New(st, Logger(quiet), PollInterval(never), Buffer(16)))
	slow := subscribe(t, h, page, 2)
	fast := subscribe(t, h, page, 2)

	const n = 60
	got := make(chan int64, n)
	go func() {
		defer close(got)
		for ev := range fast.C() {
			got <- ev.Seq
		}
	}()
	for i := range n {
		start := time.Now()
		w.edit(t, page, fmt.Sprint(i))
		select {
		case seq := <-got:
			if seq != int64(3+i) {
				t.Fatalf("fast got %d, want %d", seq, 3+i)
			}
		case <-time.After(time.Minute): // a hang detector
			t.Fatalf("fast subscriber did not get seq %d (slow: %v)", 3+i, slow.Err())
		}
		// A hub that waited on the slow one would hold every later
		// event; a busy machine only slows each a little (the bound is
		// far above that, and far below a wait for a reader that never
		// reads).
		if d := time.Since(start); d > 30*time.Second {
			t.Fatalf("seq %d took %v", 3+i, d)
		}
	}
	// The slow one got its buffer's worth, then ErrSlow.
	var seqs []int64
	for ev := range slow.C() {
		seqs = append(seqs, ev.Seq)
	}
	if !errors.Is(slow.Err(), ErrSlow) || len(seqs) != 16 || seqs[0] != 3 || seqs[15] != 18 {
		t.Fatalf("slow: err %v, seqs %v", slow.Err(), seqs)
	}
	if fast.Err() != nil || h.Subscribers() != 1 {
		t.Fatalf("fast err %v, subscribers %d", fast.Err(), h.Subscribers())
	}
	// It resumes after its last seq.
	again := subscribe(t, h, page, seqs[len(seqs)-1])
	expect(t, again, 18, 2+n)
}

// A replay longer than the buffer is not ErrSlow: it is paced by the reader.
func TestLongReplaySmallBuffer(t *testing.T) {
	st := openStore(t, pgprovider.ForTest(t))
	w := newWriter(t, st)
	page := w.newPage(t)
	for i := range 40 {
		w.edit(t, page, fmt.Sprint(i))
	}
	h := startHub(t, New(st, Logger(quiet), PollInterval(never), Buffer(2)))
	sub := subscribe(t, h, page, 0)
	time.Sleep(100 * time.Millisecond) // let the replay fill the buffer
	expect(t, sub, 0, 42)
	w.edit(t, page, "live")
	expect(t, sub, 42, 43)
}

// (5) a command committed while the LISTEN connection is down (no NOTIFY
// reaches the hub; polling is off) is delivered after the reconnect.
func TestCatchUpAfterReconnect(t *testing.T) {
	dsn := pgprovider.ForTest(t)
	st := openStore(t, dsn)
	// The commands come from another instance: this hub learns of them by
	// NOTIFY and reads them from the log.
	w := newWriter(t, openStore(t, dsn))
	page := w.newPage(t)

	var mu sync.Mutex
	attempts := 0
	blocked := make(chan struct{})
	release := make(chan struct{})
	h := New(st, Logger(quiet), PollInterval(never))
	h.listener.BeforeConnect = func() {
		mu.Lock()
		attempts++
		a := attempts
		mu.Unlock()
		if a == 2 {
			close(blocked)
			<-release
		}
	}
	startHub(t, h)
	sub := subscribe(t, h, page, 2)

	ctx := context.Background()
	listener := func() int32 {
		var pid int32
		deadline := time.Now().Add(time.Minute) // a hang detector
		for {
			err := st.Pool().QueryRow(ctx, `SELECT pid FROM pg_stat_activity
				WHERE application_name = $1 AND datname = current_database() AND query LIKE 'LISTEN%'`, pglisten.AppName).Scan(&pid)
			if err == nil {
				return pid
			}
			if time.Now().After(deadline) {
				t.Fatalf("no LISTEN connection: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	pid := listener()
	w.edit(t, page, "before")
	expect(t, sub, 2, 3) // via NOTIFY

	var ok bool
	if err := st.Pool().QueryRow(ctx, `SELECT pg_terminate_backend($1)`, pid).Scan(&ok); err != nil || !ok {
		t.Fatalf("terminate %d: %v %v", pid, ok, err)
	}
	select {
	case <-blocked:
	case <-time.After(time.Minute): // a hang detector
		t.Fatal("the hub did not notice the lost connection")
	}
	w.edit(t, page, "while down 1")
	w.edit(t, page, "while down 2")
	expectNothing(t, sub, 200*time.Millisecond) // nobody is listening, no poll
	if lag := h.Lag(); lag != 0 {
		t.Logf("lag while down: %v (no notification seen)", lag)
	}
	close(release)
	expect(t, sub, 3, 5)
	if pid2 := listener(); pid2 == pid {
		t.Fatalf("same LISTEN backend %d after reconnect", pid)
	}
	w.edit(t, page, "after")
	expect(t, sub, 5, 6)
}

// The safety poll delivers even when notifications are lost.
func TestPollWithoutListen(t *testing.T) {
	st := openStore(t, pgprovider.ForTest(t))
	w := newWriter(t, st)
	page := w.newPage(t)
	h := New(st, Logger(quiet), PollInterval(50*time.Millisecond))
	h.listener.BeforeConnect = func() { <-h.ctx.Done() } // never connects
	startHub(t, h)
	sub := subscribe(t, h, page, 1)
	expect(t, sub, 1, 2)
	w.edit(t, page, "x")
	expect(t, sub, 2, 3)
}

func TestContextAndShutdown(t *testing.T) {
	st := openStore(t, pgprovider.ForTest(t))
	w := newWriter(t, st)
	page := w.newPage(t)
	h := New(st, Logger(quiet), PollInterval(never))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()

	sctx, scancel := context.WithCancel(context.Background())
	s1, err := h.Subscribe(sctx, page, 2)
	if err != nil {
		t.Fatal(err)
	}
	scancel()
	if _, ok := <-s1.C(); ok {
		t.Fatal("event after cancel")
	}
	if !errors.Is(s1.Err(), context.Canceled) {
		t.Fatalf("err %v", s1.Err())
	}
	live, _ := h.Subscribe(context.Background(), page, 2)
	replaying, _ := h.Subscribe(context.Background(), page, 0)
	if h.Subscribers() != 2 {
		t.Fatalf("Subscribers = %d", h.Subscribers())
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	for _, s := range []*Subscription{live, replaying} {
		for range s.C() {
		}
		if !errors.Is(s.Err(), ErrClosed) {
			t.Fatalf("after shutdown: %v", s.Err())
		}
	}
	if _, err := h.Subscribe(context.Background(), page, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("Subscribe after shutdown: %v", err)
	}
	if err := h.Run(context.Background()); err == nil {
		t.Fatal("second Run accepted")
	}
}

// TestIdleSubscriberMemory measures the heap cost of idle live
// subscriptions (each with a cancelable ctx, as an HTTP request has).
func TestIdleSubscriberMemory(t *testing.T) {
	st := openStore(t, pgprovider.ForTest(t))
	w := newWriter(t, st)
	const pages, subsPerPage = 50, 100
	const n = pages * subsPerPage
	var ids []string
	for range pages {
		ids = append(ids, w.newPage(t))
	}
	h := startHub(t, New(st, Logger(quiet), PollInterval(never)))
	// Register the pages first, so that only subscriptions are measured.
	warm := make([]*Subscription, 0, pages)
	for _, id := range ids {
		warm = append(warm, subscribe(t, h, id, 2))
	}
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	keep := make([]*Subscription, 0, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range n {
		ctx, c := context.WithCancel(parent)
		_ = c
		s, err := h.Subscribe(ctx, ids[i%pages], 2)
		if err != nil {
			t.Fatal(err)
		}
		keep = append(keep, s)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
	t.Logf("idle live subscriber (buffer %d, incl. its context): %.0f bytes of heap each (%d subscriptions, %d goroutines in the process)",
		DefaultBuffer, per, n, runtime.NumGoroutine())
	if per > 4096 {
		t.Errorf("%.0f bytes per idle subscriber", per)
	}
	// They all still work.
	w.edit(t, ids[0], "ping")
	for i := 0; i < n; i += pages {
		expect(t, keep[i], 2, 3)
	}
	runtime.KeepAlive(warm)
}

// (5b) commands committed by this process's store reach its hub's live
// subscribers at once, without NOTIFY or a read of the log; a command of
// another instance in between is a gap the direct path does not cross:
// the catch-up delivers it and what follows, in order.
func TestLocalCommitsNeedNoNotification(t *testing.T) {
	dsn := pgprovider.ForTest(t)
	st := openStore(t, dsn)
	local := newWriter(t, st)
	remote := newWriter(t, openStore(t, dsn))
	remote.dev = local.dev // the same device, through another instance
	page := local.newPage(t)

	listening := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	h := New(st, Logger(quiet), PollInterval(never))
	h.listener.BeforeConnect = func() {
		once.Do(func() { close(listening) })
		<-release // no LISTEN connection until released
	}
	var released sync.Once
	unblock := func() { released.Do(func() { close(release) }) }
	startHub(t, h)
	t.Cleanup(unblock) // before the hub stops: cleanups run last first
	<-listening
	sub := subscribe(t, h, page, 2)
	// The page's first catch-up (at registration) is over before the
	// commands: nothing but the direct path delivers them.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) { // a hang detector
		h.mu.Lock()
		busy := h.pages[page].running
		h.mu.Unlock()
		if !busy {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the page's first catch-up did not end")
		}
	}
	local.edit(t, page, "one")
	local.edit(t, page, "two")
	got := expect(t, sub, 2, 4)
	var p struct{ Text string }
	if err := json.Unmarshal(got[1].Cmd.Payload, &p); err != nil || p.Text != "two" || got[1].DeviceID != local.dev.DeviceID {
		t.Fatalf("event 4: %+v (%v)", got[1], err)
	}

	remote.edit(t, page, "remote") // seq 5: nothing tells this hub
	local.edit(t, page, "after")   // seq 6: not next to the cursor
	expectNothing(t, sub, 200*time.Millisecond)
	unblock()
	expect(t, sub, 4, 6)
	local.edit(t, page, "live again")
	expect(t, sub, 6, 7)
}

// A commit of this process is delivered by the commit hook alone: its
// notification, which also comes, starts no read of the log. A commit
// whose notification comes from one of the store's connections but whose
// hook never runs (the COMMIT's answer lost) is still delivered, from the
// log, after the grace.
func TestLocalNotificationsReadNoLog(t *testing.T) {
	st := openStore(t, pgprovider.ForTest(t))
	w := newWriter(t, st)
	page := w.newPage(t)
	h := New(st, Logger(quiet), PollInterval(never))
	// A grace long enough for a loaded machine's hook (the logic of each
	// notification's grace is TestLocalGraceIsPerNotification's).
	h.grace = time.Second
	startHub(t, h)
	// A listener that connects after the first commits notes the head
	// from its first check, without a grace, and reads the log (as in
	// TestLocalGraceIsPerNotification).
	waitListening(t, st)
	sub := subscribe(t, h, page, 2)
	waitIdle(t, h, page)
	reads := h.logReads.Load()
	const n = 20
	for i := range n {
		w.edit(t, page, fmt.Sprint("local ", i))
	}
	expect(t, sub, 2, 2+n)
	time.Sleep(2 * h.grace)
	waitIdle(t, h, page)
	if got := h.logReads.Load() - reads; got != 0 {
		t.Fatalf("%d local commits read the log %d times", n, got)
	}

	// A commit on one of the store's own connections that no hook sees.
	seq := int64(3 + n)
	unhookedCommit(t, st, w, page, seq)
	ev := expect(t, sub, seq-1, seq)
	if !strings.Contains(string(ev[0].Cmd.Payload), "unhooked") {
		t.Fatalf("event %d: %s", seq, ev[0].Cmd.Payload)
	}
	if h.logReads.Load() == reads {
		t.Fatal("the unhooked commit was delivered without a read of the log")
	}
}

// waitListening waits until the hub's listener has taken its LISTEN.
func waitListening(t *testing.T, st *store.Store) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) { // a hang detector
		var n int
		if err := st.Pool().QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = $1 AND state = 'idle' AND query LIKE 'LISTEN %'`,
			pglisten.AppName).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the hub's listener did not LISTEN")
		}
	}
}

// waitIdle waits until no catch-up and no grace is under way on page.
func waitIdle(t *testing.T, h *Hub, page string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) { // a hang detector
		h.mu.Lock()
		p := h.pages[page]
		busy := p.running || p.graceArmed
		h.mu.Unlock()
		if !busy {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the page's catch-up did not end")
		}
	}
}

// unhookedCommit commits command seq of page on one of the store's own
// connections, with its notification, and no commit hook.
func unhookedCommit(t *testing.T, st *store.Store, w writer, page string, seq int64) {
	t.Helper()
	ctx := context.Background()
	tx, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `INSERT INTO command_log (workspace_id, id, page_id, seq, device_id, type, payload, inverse, outcome)
		VALUES ($1, $2, $3, $4, $5, 'edit-text', '{"node":"n","text":"unhooked"}', '{}', 'committed')`,
		w.dev.WorkspaceID, uuid.NewString(), page, seq, w.dev.DeviceID); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE pages SET seq = $2 WHERE id = $1`, page, seq); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, store.NotifyChannel, fmt.Sprintf("%s:%d", page, seq)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// Each local notification gets its whole grace: a grace armed for one
// seq that ends while a later seq's notification waits for its hook
// grants that seq a grace of its own instead of reading the log. The
// timers are the test's: it ends each grace at the worst moment, just
// after the next notification and before its hook.
func TestLocalGraceIsPerNotification(t *testing.T) {
	st := openStore(t, pgprovider.ForTest(t))
	w := newWriter(t, st)
	page := w.newPage(t) // seqs 1, 2
	graces := make(chan func(), 16)
	var h *Hub
	noted := func(seq int64) bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.pages[page].target >= seq
	}
	// Before the hub's hook: hold each commit of the page until the hub
	// has its notification; at seq 4, end the grace armed at seq 3.
	st.OnCommit(func(id string, entries []store.Entry) {
		if id != page {
			return
		}
		seq := entries[len(entries)-1].Seq
		for deadline := time.Now().Add(time.Minute); !noted(seq); time.Sleep(time.Millisecond) { // a hang detector
			if time.Now().After(deadline) {
				t.Errorf("no notification of seq %d", seq)
				return
			}
		}
		if seq == 4 {
			select {
			case f := <-graces:
				f()
			case <-time.After(time.Minute): // a hang detector
				t.Error("no grace was armed for seq 3")
			}
		}
	})
	h = New(st, Logger(quiet), PollInterval(never))
	h.afterFunc = func(_ time.Duration, f func()) { graces <- f }
	startHub(t, h)
	waitListening(t, st) // else seq 3 may be noted by the listener's first check of the heads, not by its notification
	sub := subscribe(t, h, page, 2)
	waitIdle(t, h, page) // the subscription's first catch-up
	reads := h.logReads.Load()
	w.edit(t, page, "three") // arms a grace for seq 3
	w.edit(t, page, "four")  // its notification waits under that grace when it ends
	expect(t, sub, 2, 4)
	endGrace(t, graces) // seq 4's own grace
	if got := h.logReads.Load() - reads; got != 0 {
		t.Fatalf("two hooked commits read the log %d times", got)
	}
	select {
	case <-graces:
		t.Fatal("a grace armed with nothing left to wait for")
	default:
	}

	unhookedCommit(t, st, w, page, 5)
	endGrace(t, graces) // the hook that never comes
	if ev := expect(t, sub, 4, 5); !strings.Contains(string(ev[0].Cmd.Payload), "unhooked") {
		t.Fatalf("event 5: %s", ev[0].Cmd.Payload)
	}
	if h.logReads.Load() == reads {
		t.Fatal("the unhooked commit was delivered without a read of the log")
	}
}

// endGrace ends the next grace the hub arms.
func endGrace(t *testing.T, graces <-chan func()) {
	t.Helper()
	select {
	case f := <-graces:
		f()
	case <-time.After(time.Minute): // a hang detector
		t.Fatal("no grace was armed")
	}
}
