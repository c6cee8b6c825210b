package pgfault

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/target"
)

func TestJudgeGrowth(t *testing.T) {
	mk := func(n int, rss func(i int) int64, gor func(i int) int, fault func(i int) bool) []Sample {
		var out []Sample
		for i := range n {
			out = append(out, Sample{At: float64(i), Fault: fault(i),
				Server:    ProcSample{RSS: rss(i), Goroutines: gor(i), FDs: 20, Sockets: 10},
				Generator: ProcSample{RSS: 1 << 20, Goroutines: 50, FDs: 30, Sockets: 12}})
		}
		return out
	}
	never := func(int) bool { return false }
	flat := mk(40, func(int) int64 { return 100 << 20 }, func(int) int { return 30 }, never)
	for _, s := range judge(flat, 8) {
		if !s.OK || s.Growth != 0 {
			t.Errorf("flat %s: %+v", s.Name, s)
		}
	}
	// RSS grows 20 % over the run: fails; goroutines grow by 3: within the slack.
	growing := mk(40, func(i int) int64 { return int64(100<<20) + int64(i)*(100<<20)/160 }, func(i int) int { return 30 + i/13 }, never)
	byName := map[string]Series{}
	for _, s := range judge(growing, 8) {
		byName[s.Name] = s
	}
	if s := byName["server RSS bytes"]; s.OK || s.Growth < MaxGrowth {
		t.Errorf("a growing RSS passed: %+v", s)
	}
	if s := byName["server goroutines"]; !s.OK {
		t.Errorf("3 more goroutines failed: %+v", s)
	}
	// Goroutines up by 5 in most samples of the last quarter but back at
	// 30 in some: work in flight, not judged a leak; up in all: a leak.
	inFlight := mk(40, func(int) int64 { return 100 << 20 }, func(i int) int {
		if i >= 30 && i%3 != 0 {
			return 30 + CountSlack + 1
		}
		return 30
	}, never)
	leak := mk(40, func(int) int64 { return 100 << 20 }, func(i int) int {
		if i >= 30 {
			return 30 + CountSlack + 1
		}
		return 30
	}, never)
	for _, c := range []struct {
		name    string
		samples []Sample
		ok      bool
	}{{"in flight", inFlight, true}, {"leak", leak, false}} {
		for _, s := range judge(c.samples, 8) {
			if s.Name == "server goroutines" && s.OK != c.ok {
				t.Errorf("goroutines %s: OK %v, want %v: %+v", c.name, s.OK, c.ok, s)
			}
		}
	}
	// A spike during faults (and the warm-up) is not judged.
	spiky := mk(40, func(i int) int64 {
		if i%10 < 2 || i < 8 {
			return 400 << 20
		}
		return 100 << 20
	}, func(int) int { return 30 }, func(i int) bool { return i%10 < 2 })
	for _, s := range judge(spiky, 8) {
		if !s.OK {
			t.Errorf("spikes during faults judged: %+v", s)
		}
	}
	if judge(flat[:3], 0) != nil {
		t.Error("3 samples judged")
	}
}

// A soak asks each writer to reopen its window at every audit, so that
// the window's undo history (kept without bound by kbcore.Window) stays
// bounded. With no pause between commands the echo of a command usually
// arrives after the next is issued: a window is seldom idle at the moment
// of the request, and a reopen done only if it is (as before) was skipped
// at most audits, the history growing for the whole run. Every request
// must be served, on a real server and Postgres.
func TestWriterReopensWhenAsked(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	popts := pgprovider.OptionsFromEnv()
	popts.Kind = pgprovider.KindLocal
	popts.Topology = pgprovider.TopologySingle
	pg, err := pgprovider.Start(ctx, popts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pg.Stop(context.WithoutCancel(ctx)) }()
	dsn, _, err := pg.NewDatabase(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	e, err := target.NewEmbedded(ctx, dsn, target.EmbeddedOptions{Instances: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	cfg := Config{Writers: 2, Shared: 1, Instances: 1, MaxNodes: 4, Seed: 1}
	r := &run{cfg: cfg, acks: map[string]ack{}, ackSeqs: map[string]map[int64]bool{},
		seen: map[slot]string{}, reused: map[slot]bool{}, promoted: make(chan struct{})}
	if err := r.setup(ctx, e); err != nil {
		t.Fatal(err)
	}
	defer r.closeWindows()
	load, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, w := range r.writers {
		wg.Go(func() { w.run(load, ctx) })
	}
	defer func() { stopLoad(); wg.Wait() }()
	reopens := func(w *writer) int {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.reopens
	}
	const asks = 10
	for i := range asks {
		time.Sleep(150 * time.Millisecond)
		for _, w := range r.writers {
			w.requestReopen()
		}
		for _, w := range r.writers {
			for deadline := time.Now().Add(3 * reopenWait); reopens(w) <= i && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			if got := reopens(w); got != i+1 {
				t.Fatalf("writer %d: %d reopens after %d requests", w.idx, got, i+1)
			}
		}
	}
	stopLoad()
	wg.Wait()
	if n := r.nAcks.Load(); n < asks {
		t.Fatalf("only %d commands acknowledged: the writers did not write", n)
	}
	if len(r.rejected)+len(r.refused) > 0 {
		t.Fatalf("rejected %q, refused %q", r.rejected, r.refused)
	}
}
