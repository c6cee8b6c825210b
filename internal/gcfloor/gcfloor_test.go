package gcfloor

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	for _, c := range []struct{ live, floor, want int64 }{
		{13 << 20, 32 << 20, 246},  // 13 MB live: goal 13 + 32 MB
		{32 << 20, 32 << 20, 100},  // the floor equals GOGC=100's headroom
		{200 << 20, 32 << 20, 100}, // a large live heap: GOGC=100
		{1 << 10, 32 << 20, 10000}, // bounded
		{0, 32 << 20, 3200},        // no reading: as if 1 MB live
	} {
		if got := Percent(c.live, c.floor); got != c.want {
			t.Errorf("Percent(%d, %d) = %d, want %d", c.live, c.floor, got, c.want)
		}
	}
}

// gcPercent reads the GC percent in effect.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func TestStartRaisesTheGoalAndStopRestoresIt(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOGC or GOMEMLIMIT set: the floor is off by design")
	}
	stop := Start(1 << 30)
	defer stop()
	deadline := time.Now().Add(time.Minute) // a hang detector
	for gcPercent() <= 100 {
		if time.Now().After(deadline) {
			t.Fatalf("GC percent %d after collections, want above 100 with a 1 GiB floor", gcPercent())
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if again := Start(1 << 30); gcPercent() <= 100 {
		t.Fatal("a second Start changed the running floor")
	} else {
		again()
	}
	stop()
	if p := gcPercent(); p != 100 {
		t.Fatalf("GC percent %d after stop, want 100 (the percent before Start)", p)
	}
	runtime.GC()
	runtime.GC()
	time.Sleep(20 * time.Millisecond)
	if p := gcPercent(); p != 100 {
		t.Fatalf("GC percent %d after stop and collections, want 100", p)
	}
}

func TestEnvironmentTurnsItOff(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "1GiB")
	stop := Start(1 << 30)
	defer stop()
	runtime.GC()
	runtime.GC()
	time.Sleep(20 * time.Millisecond)
	if p := gcPercent(); p != 100 {
		t.Fatalf("GC percent %d with GOMEMLIMIT set, want 100 (untouched)", p)
	}
}

// A percent set before Start is the one stop restores.
func TestStopRestoresThePriorPercent(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOGC or GOMEMLIMIT set: the floor is off by design")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	stop := Start(1 << 30)
	stop()
	if p := gcPercent(); p != 400 {
		t.Fatalf("GC percent %d after stop, want 400", p)
	}
}

// The floor the docs state is Default.
func TestDocsStateTheDefault(t *testing.T) {
	b, err := os.ReadFile("../../loadgen/README.md")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d MiB above the live heap (`internal/gcfloor`", Default>>20)
	if !strings.Contains(strings.Join(strings.Fields(string(b)), " "), want) {
		t.Fatalf("loadgen/README.md does not say %q", want)
	}
}
