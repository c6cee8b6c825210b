package loadgen

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/subspace/kbkit/loadgen/metrics"
)

func TestConstantPacer(t *testing.T) {
	p := Constant(100)
	for _, c := range []struct {
		t    time.Duration
		want int64
	}{{0, 0}, {time.Nanosecond, 1}, {10 * time.Millisecond, 1}, {10*time.Millisecond + 1, 2}, {time.Second, 100}, {2500 * time.Millisecond, 250}} {
		if got := p.Due(c.t); got != c.want {
			t.Errorf("Due(%s) = %d, want %d", c.t, got, c.want)
		}
	}
	for n := int64(0); n < 1000; n += 37 {
		at, ok := p.At(n)
		if want := time.Duration(n) * 10 * time.Millisecond; !ok || absDur(at-want) > time.Microsecond {
			t.Errorf("At(%d) = %s, %v; want %s", n, at, ok, want)
		}
	}
	if r := p.Rate(time.Hour); r != 100 {
		t.Errorf("Rate = %g", r)
	}
}

func TestRampingPacer(t *testing.T) {
	stages, err := ParseStages("10s:100,20s:100,10s:0")
	if err != nil {
		t.Fatal(err)
	}
	p := Pacer{Stages: stages}
	if d := p.Duration(); d != 40*time.Second {
		t.Fatalf("Duration = %s", d)
	}
	// 0 -> 100 over 10 s: 500 operations; 20 s at 100: 2000; 100 -> 0 over 10 s: 500.
	for _, c := range []struct {
		t    time.Duration
		want int64
	}{{10 * time.Second, 500}, {30 * time.Second, 2500}, {40 * time.Second, 3000}, {time.Hour, 3000}} {
		if got := p.Due(c.t); got != c.want {
			t.Errorf("Due(%s) = %d, want %d", c.t, got, c.want)
		}
	}
	// Half way up the ramp the rate is 50/s; 50 operations are due at √10 s.
	if r := p.Rate(5 * time.Second); math.Abs(r-50) > 1e-9 {
		t.Errorf("Rate(5s) = %g", r)
	}
	if at, _ := p.At(50); absDur(at-time.Duration(math.Sqrt(10)*float64(time.Second))) > time.Microsecond {
		t.Errorf("At(50) = %s, want √10 s", at)
	}
	// Nothing is due after the last stage ramps down to zero.
	if _, ok := p.At(3000); ok {
		t.Error("At(3000) should never come: the rate ends at 0")
	}
	// Due and At are inverses: exactly n operations are due at At(n).
	for _, pc := range []Pacer{p, Constant(7), {Start: 3, Stages: []Stage{{time.Second, 1000}}}, {Start: 50, Stages: []Stage{{2 * time.Second, 10}}}} {
		for n := int64(0); n < 2500; n += 13 {
			at, ok := pc.At(n)
			if !ok {
				break
			}
			if got := pc.Due(at); got != n {
				t.Fatalf("%+v: Due(At(%d) = %s) = %d", pc, n, at, got)
			}
			if got := pc.Due(at + time.Microsecond); got != n+1 {
				t.Fatalf("%+v: Due(At(%d)+1µs) = %d, want %d", pc, n, got, n+1)
			}
		}
	}
}

func TestZeroRates(t *testing.T) {
	if _, ok := Constant(0).At(0); ok {
		t.Error("a zero rate has no first operation")
	}
	p := Pacer{Stages: []Stage{{5 * time.Second, 0}, {time.Second, 10}}}
	if at, ok := p.At(0); !ok || at != 5*time.Second {
		t.Errorf("first operation at %s, %v; want 5s", at, ok)
	}
	if d := p.Due(5 * time.Second); d != 0 {
		t.Errorf("Due(5s) = %d", d)
	}
}

func TestParseStagesErrors(t *testing.T) {
	for _, s := range []string{"", "10s", "x:5", "10s:-1", "0s:5", "10s:abc"} {
		if _, err := ParseStages(s); err == nil {
			t.Errorf("ParseStages(%q) should fail", s)
		}
	}
}

// TestPaceDropsWhatCannotStart: with nobody taking operations and room
// for two, every operation past the second is dropped, and every one is
// counted as due.
func TestPaceDropsWhatCannotStart(t *testing.T) {
	rec := metrics.NewRecorder()
	queue := make(chan time.Time, 2)
	start := time.Now()
	pace(context.Background(), Constant(1000), start, start.Add(200*time.Millisecond), queue, rec)
	c := rec.Totals()
	if c.Due != 200 {
		t.Errorf("due = %d, want 200", c.Due)
	}
	if c.Dropped != c.Due-2 || len(queue) != 2 {
		t.Errorf("dropped = %d, queued %d, of %d due", c.Dropped, len(queue), c.Due)
	}
	// The queued operations carry their intended starts, 1 ms apart.
	first, second := <-queue, <-queue
	if !first.Equal(start) || second.Sub(first) != time.Millisecond {
		t.Errorf("intended starts %s, %s", first.Sub(start), second.Sub(start))
	}
}

// TestPaceKeepsScheduleWhenLate: operations offered late keep their
// intended start, so latency counts the delay (no coordinated omission).
func TestPaceKeepsScheduleWhenLate(t *testing.T) {
	rec := metrics.NewRecorder()
	queue := make(chan time.Time, 1000)
	start := time.Now().Add(-time.Second) // the pacer starts a second late
	pace(context.Background(), Constant(100), start, start.Add(1200*time.Millisecond), queue, rec)
	if n := len(queue); n != 120 {
		t.Fatalf("%d operations offered, want 120", n)
	}
	for i := 0; i < 120; i++ {
		if at := <-queue; at.Sub(start) != time.Duration(i)*10*time.Millisecond {
			t.Fatalf("operation %d intended at %s", i, at.Sub(start))
		}
	}
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
