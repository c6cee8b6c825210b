package gcfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// Default is the floor kbkit serve uses: larger than its live heap with a
// thousand pages cached, so that under load the floor, not GOGC=100, sets
// the goal and the server collects several times less often.
const Default = 32 << 20

// base is the GC percent the goal is never below.
const base = 100

var (
	running atomic.Bool
	floor   atomic.Int64
	percent atomic.Int64 // the percent last set
	prior   int          // the percent before Start, restored by stop
	gen     atomic.Int64 // the current Start's; an older chain of finalizers ends
)

// Start keeps the heap goal at least bytes above the live heap until the
// returned stop is called (stop restores the GC percent of before). It
// does nothing (and
// returns a no-op stop) when bytes <= 0, when GOGC or GOMEMLIMIT is set in
// the environment, or when a floor is already running.
func Start(bytes int64) (stop func()) {
	if bytes <= 0 || os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" || !running.CompareAndSwap(false, true) {
		return func() {}
	}
	prior = debug.SetGCPercent(base)
	floor.Store(bytes)
	percent.Store(base)
	arm(gen.Add(1))
	var once atomic.Bool
	return func() {
		if once.CompareAndSwap(false, true) {
			floor.Store(0)
			debug.SetGCPercent(prior)
			running.Store(false)
		}
	}
}

// sentinel is an object whose finalizer runs once per collection.
type sentinel struct{ _ [16]byte }

func arm(g int64) {
	s := new(sentinel)
	runtime.SetFinalizer(s, func(*sentinel) {
		if floor.Load() <= 0 || gen.Load() != g {
			return // stopped: not re-armed
		}
		adjust()
		arm(g)
	})
}

var liveSample = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}

// adjust sets the GC percent for the live heap of the last collection.
func adjust() {
	metrics.Read(liveSample)
	if liveSample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	p := Percent(int64(liveSample[0].Value.Uint64()), floor.Load())
	// Only a change of more than a tenth is worth a call (each takes the
	// heap lock).
	if old := percent.Load(); p*10 > old*11 || p*11 < old*10 {
		debug.SetGCPercent(int(p))
		percent.Store(p)
	}
}

// Percent is the GC percent that makes the goal of a live heap live at
// least live + floor, and never less than GOGC=100's.
func Percent(live, floor int64) int64 {
	if live <= 0 {
		live = 1 << 20
	}
	p := floor * 100 / live
	if p < base {
		return base
	}
	// Bounded, for a live heap near zero (as at start).
	return min(p, 10000)
}
