package taskpool

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

// goid is the running goroutine's id, from its stack header.
func goid() int {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	f := bytes.Fields(buf)
	id, _ := strconv.Atoi(string(f[1]))
	return id
}

func waitParked(t *testing.T, p *Pool, n int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); p.Parked() != n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines parked, want %d", p.Parked(), n)
		}
	}
}

// A task given while a goroutine is parked runs on it. A goroutine counts
// itself parked just before it waits for a task, so a task given in
// between finds none waiting and gets a goroutine of its own (allowed);
// on a busy machine that may happen a few times in 20, never every time.
func TestReusesParkedGoroutine(t *testing.T) {
	p := New(1)
	defer p.Close()
	ids := make(chan int, 1)
	prev, reused := 0, 0
	for i := range 20 {
		p.Go(func() { ids <- goid() })
		id := <-ids
		if i > 0 && id == prev {
			reused++
		}
		prev = id
		waitParked(t, p, 1)
		time.Sleep(time.Millisecond) // for the parked goroutine to wait
	}
	if reused < 15 {
		t.Fatalf("%d of 19 tasks ran on the goroutine parked by the task before, want nearly all", reused)
	}
}

// At most max goroutines stay parked, every task runs, and Close ends
// the parked ones.
func TestBoundAndClose(t *testing.T) {
	base := runtime.NumGoroutine()
	p := New(3)
	var wg sync.WaitGroup
	release := make(chan struct{})
	const n = 50
	wg.Add(n)
	for range n {
		p.Go(func() { <-release; wg.Done() })
	}
	close(release)
	wg.Wait()
	waitParked(t, p, 3)
	p.Close()
	waitParked(t, p, 0)
	for deadline := time.Now().Add(time.Minute); runtime.NumGoroutine() > base; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after Close, %d before", runtime.NumGoroutine(), base)
		}
	}
	// A task given after Close still runs.
	done := make(chan struct{})
	p.Go(func() { close(done) })
	select {
	case <-done:
	case <-time.After(time.Minute): // a hang detector
		t.Fatal("a task given after Close did not run")
	}
	p.Close()
}
