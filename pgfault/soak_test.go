package pgfault

import (
	"context"
	"strings"
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
	for _, s := range series(judge(flat, 8, 40, 1)) {
		if !s.OK || s.Growth != 0 {
			t.Errorf("flat %s: %+v", s.Name, s)
		}
	}
	// RSS grows 20 % over the run: fails; goroutines grow by 3: within the slack.
	growing := mk(40, func(i int) int64 { return int64(100<<20) + int64(i)*(100<<20)/160 }, func(i int) int { return 30 + i/13 }, never)
	byName := map[string]Series{}
	for _, s := range series(judge(growing, 8, 40, 1)) {
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
		for _, s := range series(judge(c.samples, 8, 40, 1)) {
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
	for _, s := range series(judge(spiky, 8, 40, 1)) {
		if !s.OK {
			t.Errorf("spikes during faults judged: %+v", s)
		}
	}
	if ss, _, why := judge(flat[:3], 0, 40, 1); ss != nil || why == "" {
		t.Errorf("3 samples judged: %v", ss)
	}
}

// series is judge's verdicts, or nil if it had none.
func series(ss []Series, _ int, _ string) []Series { return ss }

// Memory rises and falls with each collection: a few samples of it
// cannot tell a leak from noise, and are not judged (a 60 s soak sampled
// every 5 s failed on its last sample, 10.8 % above the first quarter's).
// Enough samples are, by their trend: noise of ±8 % around a flat line
// passes, a leak of 15 % under the same noise fails. Samples after the
// load's end, and samples taken late because the machine starved the
// sampler, are not judged either.
func TestJudgeTrend(t *testing.T) {
	mk := func(n int, every float64, rss func(i int) float64) []Sample {
		var out []Sample
		for i := range n {
			out = append(out, Sample{At: every * float64(i),
				Server:    ProcSample{RSS: 50 << 20, Goroutines: 30, FDs: 20, Sockets: 10},
				Generator: ProcSample{RSS: int64(rss(i)), Goroutines: 50, FDs: 30, Sockets: 12}})
		}
		return out
	}
	// A sawtooth and a spike: the garbage collector's pattern.
	noise := func(i int) float64 { return 1 + 0.08*float64(i%5-2)/2 + map[bool]float64{true: 0.1}[i%17 == 16] }
	verdict := func(ss []Series) Series {
		for _, s := range ss {
			if s.Name == "generator RSS bytes" {
				return s
			}
		}
		t.Fatalf("no generator RSS series in %v", ss)
		return Series{}
	}
	few := mk(16, 5, func(i int) float64 { return 40e6 * noise(i) })
	if ss, _, why := judge(few, 12, 60, 5); ss != nil || !strings.Contains(why, "fewer than the") {
		t.Errorf("9 samples judged (%q): %+v", why, ss)
	}
	flat := mk(120, 1, func(i int) float64 { return 40e6 * noise(i) })
	ss, n, why := judge(flat, 24, 120, 1)
	if s := verdict(ss); !s.OK || why != "" || n < MinTrendSamples {
		t.Errorf("noise around a flat line judged a leak (%d samples, %q): %+v", n, why, s)
	}
	leak := mk(120, 1, func(i int) float64 { return 40e6 * (1 + 0.15*float64(i-24)/96) * noise(i) })
	if s := verdict(series(judge(leak, 24, 120, 1))); s.OK || s.Growth < 0.12 || s.Growth > 0.18 {
		t.Errorf("a leak of 15 %% under noise passed or was misjudged: %+v", s)
	}
	// After the load (the last audit reads the logs), memory may rise:
	// not judged.
	after := mk(150, 1, func(i int) float64 { return 40e6 * noise(i) * map[bool]float64{true: 1.5, false: 1}[i > 120] })
	if s := verdict(series(judge(after, 24, 120, 1))); !s.OK {
		t.Errorf("the rise after the load's end was judged: %+v", s)
	}
	// A sampler held off (each sample 4 intervals late): starved.
	late := mk(60, 4, func(i int) float64 { return 40e6 * noise(i) })
	if ss, _, why := judge(late, 24, 240, 1); ss != nil || !strings.Contains(why, "starved") {
		t.Errorf("a starved sampler's samples judged (%q): %+v", why, ss)
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
			// Served within reopenWait by design, then a snapshot and a
			// subscription: the minute on top is a hang detector.
			for deadline := time.Now().Add(reopenWait + time.Minute); reopens(w) <= i && time.Now().Before(deadline); {
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
