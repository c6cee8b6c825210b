package cputime

import (
	"testing"
	"time"
)

func TestSelfGrowsWithWork(t *testing.T) {
	if !Supported {
		t.Skip("CPU time is not reported on this platform")
	}
	// Busy work until the process's CPU time grows: on a machine busy
	// with other work, 50 ms of wall time may be no CPU time at all; a
	// minute of busy work without growth is the failure.
	before := Self()
	after, x := before, 0
	for deadline := time.Now().Add(time.Minute); after <= before && time.Now().Before(deadline); after = Self() {
		for spin := time.Now().Add(10 * time.Millisecond); time.Now().Before(spin); {
			x++
		}
	}
	if after <= before {
		t.Fatalf("CPU time did not grow over a minute of busy work (%v then %v, %d loops)", before, after, x)
	}
}
