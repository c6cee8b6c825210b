package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestBenchFloor runs every floor briefly, the test binary standing in for
// kbkit as each measurement's other process (TestMain).
func TestBenchFloor(t *testing.T) {
	code, stdout, stderr := kbkit(t, "", "bench", "floor", "--json",
		"--sockets", "5,50", "--rate", "1000", "--duration", "500ms", "--warmup", "100ms",
		"--fsync-dir", t.TempDir(), "--fsync-duration", "200ms", "--http-rate", "200")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep floorReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if rep.NumCPU < 1 || len(rep.Loopback) != 2 || rep.Fsync == nil || rep.HTTP == nil || rep.RoundTrip == nil {
		t.Fatalf("report incomplete: %s", stdout)
	}
	for i, want := range []int{5, 50} {
		r := rep.Loopback[i]
		if r.Sockets != want || r.Writes <= 0 || r.USPerWrite <= 0 || r.USPerRead <= 0 {
			t.Errorf("loopback %d: %+v", want, r)
		}
	}
	if rep.Fsync.OpsPerSec <= 0 || rep.HTTP.USPerRequest <= 0 || rep.HTTP.USPerServed <= 0 {
		t.Errorf("fsync %+v, http %+v", rep.Fsync, rep.HTTP)
	}
	if rt := rep.RoundTrip; rt.Size != 64 || rt.RoundTrips <= 0 || rt.USMean <= 0 || rt.USP50 <= 0 || rt.ClientUS <= 0 || rt.ServerUS <= 0 {
		t.Errorf("roundtrip %+v", rt)
	}
	// The text goes to stderr with --json, one line per measurement.
	if n := strings.Count(stderr, "\n"); n != 5 {
		t.Errorf("%d lines on stderr, want 5:\n%s", n, stderr)
	}
}

func TestBenchFloorUnknown(t *testing.T) {
	code, _, stderr := kbkit(t, "", "bench", "floor", "--floors", "disk")
	if code != exitErrored || !strings.Contains(stderr, `unknown floor "disk"`) {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// loadgen/README.md states the round-trip floor's default message size as
// the flag has it.
func TestDocsStateTheRoundTripSize(t *testing.T) {
	def := newBenchFloorCmd().Flags().Lookup("roundtrip-size").DefValue
	b, err := os.ReadFile("../../loadgen/README.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := "**roundtrip**: " + def + " bytes (`--roundtrip-size`)"; !strings.Contains(string(b), want) {
		t.Fatalf("loadgen/README.md does not say %q", want)
	}
}
