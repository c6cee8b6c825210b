package cli

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/subspace/kbkit/sim"
)

// progressEvery is how often a run off a terminal prints a progress line.
var progressEvery = 5 * time.Second

// seedProgress shows a run's progress on stderr: a self-erasing line on a
// terminal, elsewhere (CI logs, files) a plain line every progressEvery.
type seedProgress struct {
	w      io.Writer
	tty    bool
	total  int
	start  time.Time
	mu     sync.Mutex
	done   int
	failed int
}

func newSeedProgress(w io.Writer, tty bool, total int, start time.Time) *seedProgress {
	return &seedProgress{w: w, tty: tty, total: total, start: start}
}

// seed is sim.Options.Progress.
func (p *seedProgress) seed(done, total int, r sim.SeedReport) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done, p.total = done, total
	verdict := "ok"
	if r.Failed() || r.Err != "" {
		p.failed++
		verdict = "FAILED"
	}
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[Kseed %d/%d (%d: %s) %s", done, total, r.Seed, verdict, time.Since(p.start).Round(time.Second))
	}
}

// tick starts the plain progress lines (off a terminal); the returned func
// stops them.
func (p *seedProgress) tick() (stop func()) {
	if p.tty {
		return func() {}
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				p.mu.Lock()
				fmt.Fprintf(p.w, "kbkit conformance run: %d/%d seeds done, %d failed, %s\n",
					p.done, p.total, p.failed, time.Since(p.start).Round(time.Second))
				p.mu.Unlock()
			}
		}
	}()
	return func() { close(quit); wg.Wait() }
}

// clear erases the terminal line.
func (p *seedProgress) clear() {
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
