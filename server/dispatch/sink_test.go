package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/subspace/kbkit/server/pgprovider"
)

// testSink records what a hub hands it; it refuses live events past
// capacity (then the hub must end it with ErrSlow).
type testSink struct {
	mu       sync.Mutex
	seqs     []int64
	capacity int
	ended    []error
	done     chan struct{}
}

func newTestSink(capacity int) *testSink {
	return &testSink{capacity: capacity, done: make(chan struct{})}
}

func (s *testSink) Live(ev *Event) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.seqs) >= s.capacity {
		return false
	}
	s.seqs = append(s.seqs, ev.Seq)
	return true
}

func (s *testSink) Replay(ctx context.Context, ev *Event) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seqs = append(s.seqs, ev.Seq)
	return true
}

func (s *testSink) Ended(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = append(s.ended, err)
	if len(s.ended) == 1 {
		close(s.done)
	}
}

// waitSeqs waits until the sink holds seqs after+1..last, in order.
func (s *testSink) waitSeqs(t *testing.T, after, last int64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a hang detector
	for {
		s.mu.Lock()
		got := append([]int64(nil), s.seqs...)
		s.mu.Unlock()
		if int64(len(got)) >= last-after {
			for i, seq := range got {
				if seq != after+1+int64(i) {
					t.Fatalf("want seqs %d..%d in order, got %v", after+1, last, got)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("want seqs %d..%d, got %v", after+1, last, got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A sink subscription gets the replay then live events in order, is
// ended with ErrSlow when it refuses a live event, and Ended is called
// exactly once.
func TestSinkSubscription(t *testing.T) {
	st := openStore(t, pgprovider.ForTest(t))
	w := newWriter(t, st)
	page := w.newPage(t)
	h := startHub(t, New(st, Logger(quiet), PollInterval(never)))

	sink := newTestSink(8) // 2 replayed + 6 live, then slow
	sub, err := h.SubscribeSink(context.Background(), page, 0, sink)
	if err != nil {
		t.Fatal(err)
	}
	if sub.C() != nil {
		t.Fatal("a sink subscription has a channel")
	}
	sink.waitSeqs(t, 0, 2)
	for i := range 6 {
		w.edit(t, page, fmt.Sprint("live", i))
	}
	sink.waitSeqs(t, 0, 8)
	w.edit(t, page, "one too many")
	select {
	case <-sink.done:
	case <-time.After(time.Minute): // a hang detector
		t.Fatal("a sink refusing a live event was not ended")
	}
	if !errors.Is(sub.Err(), ErrSlow) {
		t.Fatalf("Err = %v, want ErrSlow", sub.Err())
	}
	sub.Close()
	sink.mu.Lock()
	if len(sink.ended) != 1 || !errors.Is(sink.ended[0], ErrSlow) {
		t.Fatalf("Ended calls: %v", sink.ended)
	}
	sink.mu.Unlock()

	// Resubscribing after the last seq taken goes on without a gap; Close
	// ends it with ErrClosed.
	again := newTestSink(1000)
	sub, err = h.SubscribeSink(context.Background(), page, 8, again)
	if err != nil {
		t.Fatal(err)
	}
	w.edit(t, page, "after")
	again.waitSeqs(t, 8, 10)
	sub.Close()
	sub.Close()
	<-again.done
	if again.ended[0] != ErrClosed || len(again.ended) != 1 || h.Subscribers() != 0 {
		t.Fatalf("after Close: Ended %v, subscribers %d", again.ended, h.Subscribers())
	}
}
