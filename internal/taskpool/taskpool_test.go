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
	for deadline := time.Now().Add(5 * time.Second); p.Parked() != n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines parked, want %d", p.Parked(), n)
		}
	}
}

// A task given while a goroutine is parked runs on it.
func TestReusesParkedGoroutine(t *testing.T) {
	p := New(1)
	defer p.Close()
	ids := make(chan int, 1)
	var first int
	for i := range 20 {
		p.Go(func() { ids <- goid() })
		id := <-ids
		if i == 0 {
			first = id
		} else if id != first {
			t.Fatalf("task %d ran on goroutine %d, want the parked %d", i, id, first)
		}
		waitParked(t, p, 1)
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
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > base; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after Close, %d before", runtime.NumGoroutine(), base)
		}
	}
	// A task given after Close still runs.
	done := make(chan struct{})
	p.Go(func() { close(done) })
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a task given after Close did not run")
	}
	p.Close()
}
