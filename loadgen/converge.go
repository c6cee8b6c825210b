package loadgen

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/loadgen/metrics"
)

// ---- convergence ----

// converge waits, for every window, until it has applied every command
// its page is known to have and has nothing pending, and records how long
// after the load that took. Windows of one page at one seq must then show
// the same document.
func (r *runner) converge(end time.Time) {
	var wg sync.WaitGroup
	for _, w := range r.wins {
		wg.Go(func() { _ = w.ew.Converge(end, end.Add(r.cfg.Drain)) })
	}
	wg.Wait()
	r.sess.Diverged()
}

func (r *runner) closeWindows() {
	if r.closing.Swap(true) {
		return
	}
	for _, w := range r.wins {
		if w.ew != nil {
			w.ew.Close()
		}
	}
}

// ---- status ----

func (r *runner) statusLoop() func() {
	if r.cfg.Status == nil {
		return func() {}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				r.cfg.Status(r.status())
			}
		}
	}()
	return func() { close(stop); <-done; r.cfg.Status(r.status()) }
}

func (r *runner) status() Status {
	s := Status{Phase: r.phase.Load().(string), Model: r.cfg.Model, Duration: r.cfg.Duration,
		InFlight: r.inflight.Load(), Windows: len(r.wins), Pages: len(r.pages), Recent: map[string]time.Duration{}}
	r.startMu.Lock()
	start := r.start
	r.startMu.Unlock()
	if start.IsZero() || s.Phase == "setup" {
		return s
	}
	s.Elapsed = max(0, min(time.Since(start), r.cfg.Duration))
	s.Warmup = max(0, time.Until(start))
	if r.cfg.Model == Open && (s.Phase == "load" || s.Phase == "warmup") {
		s.Target = r.shardPacer().Rate(s.Elapsed)
	}
	const window = 5
	since := time.Now().Unix() - window + 1
	hists := map[string]*metrics.Hist{}
	var recent metrics.Counts
	for _, rec := range r.recs {
		rec.Recent(since, hists, &recent)
		s.Totals.Add(rec.Totals())
	}
	span := max(0, min(time.Since(start), time.Since(time.Unix(since, 0)))).Seconds()
	if span > 0 {
		s.Achieved = float64(recent.Committed) / span
	}
	for n, h := range hists {
		s.Recent[n] = h.Quantile(99)
	}
	return s
}

// ---- helpers ----

// retry calls fn until it succeeds, fails for good, or tries run out.
func retry(ctx context.Context, tries int, fn func() error) error {
	return client.Retry(ctx, tries, fn)
}

// parallel runs fn(0..n-1) on at most width goroutines; the first error
// wins.
func parallel(ctx context.Context, n, width int, fn func(i int) error) error {
	width = max(1, min(width, n))
	var (
		next  atomic.Int64
		first error
		mu    sync.Mutex
		wg    sync.WaitGroup
	)
	for g := 0; g < width; g++ {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					next.Store(int64(n)) // stop handing out work
					return
				}
			}
		})
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return first
}
