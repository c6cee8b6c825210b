package cputime

import (
	"testing"
	"time"
)

func TestSelfGrowsWithWork(t *testing.T) {
	if !Supported {
		t.Skip("CPU time is not reported on this platform")
	}
	before := Self()
	deadline := time.Now().Add(50 * time.Millisecond)
	x := 0
	for time.Now().Before(deadline) {
		x++
	}
	if after := Self(); after <= before {
		t.Fatalf("CPU time did not grow over 50 ms of busy work (%v then %v, %d loops)", before, after, x)
	}
}
