package floor

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The test binary is its own child: with these variables set it runs
// Child instead of the tests.
const (
	envRole   = "KBKIT_FLOOR_TEST_ROLE"
	envConfig = "KBKIT_FLOOR_TEST_CONFIG"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(envRole); role != "" {
		if err := Child(role, os.Getenv(envConfig), os.Stdin, os.Stdout); err != nil {
			os.Stderr.WriteString("floor child: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func testSpawner(t *testing.T) Spawner {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return func(role, config string) *exec.Cmd {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), envRole+"="+role, envConfig+"="+config)
		cmd.Stderr = os.Stderr
		return cmd
	}
}

// sane fails unless v is positive and at most limit (a figure of the wrong
// unit, or a clock or counter mix-up, lands outside).
//
// The limits are what the measurement itself makes true, never how fast
// this machine is: a machine busy with other work (a CI runner, a laptop
// during a build) stretches every time and every rate, and the floors
// report what they measured there. A window's mean is its seconds over
// its count, so at most its seconds; a process spends at most its seconds
// of CPU on each core (cpuLimit).
func sane(t *testing.T, what string, v, limit float64) {
	t.Helper()
	if !(v > 0 && v <= limit) {
		t.Errorf("%s = %v, want in (0, %v]", what, v, limit)
	}
}

// cpuLimit is the most CPU, in µs per operation, that one process can
// have spent on n operations in a window of seconds: every core busy the
// whole window (and half as much again for the two ends' readings, which
// are taken one after the other).
func cpuLimit(seconds float64, n int64) float64 {
	return 1.5 * 1e6 * seconds * float64(runtime.NumCPU()) / float64(max(n, 1))
}

// windowLimit bounds a window's seconds: a unit mix-up (ms, ns) lands
// orders of magnitude away; no machine stalls an hour.
const windowLimit = 3600

func TestLoopback(t *testing.T) {
	cfg := LoopbackConfig{Sockets: 20, Rate: 2000, Size: 200, Duration: 1500 * time.Millisecond, Warmup: 200 * time.Millisecond}
	r, err := Loopback(context.Background(), testSpawner(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", r)
	if r.Sockets != 20 || r.Size != 200 || r.Rate != 2000 {
		t.Errorf("config not carried into the result: %+v", r)
	}
	sane(t, "seconds", r.Seconds, windowLimit)
	// Both ends moved messages in the window, and the rate is the
	// window's writes over its seconds. How close it came to the pace
	// (2,000/s) and how far the reader trailed depend on what else the
	// machine ran: not judged.
	if r.Writes <= 0 || r.Reads <= 0 {
		t.Errorf("%d written, %d read in the window", r.Writes, r.Reads)
	}
	if want := float64(r.Writes) / r.Seconds; r.WriteRate < 0.999*want || r.WriteRate > 1.001*want {
		t.Errorf("write rate %.1f/s, but %d writes in %.3fs", r.WriteRate, r.Writes, r.Seconds)
	}
	sane(t, "µs per write", r.USPerWrite, cpuLimit(r.Seconds, r.Writes))
	sane(t, "µs per read", r.USPerRead, cpuLimit(r.Seconds, r.Reads))
	// A write or read is a syscall: it costs more than a tenth of a
	// microsecond on any machine (a figure in the wrong unit is below).
	if r.USPerWrite < 0.2 || r.USPerRead < 0.1 {
		t.Errorf("a syscall per message below 0.1 µs: %+v", r)
	}
}

func TestFsync(t *testing.T) {
	r, err := Fsync(context.Background(), FsyncConfig{Dir: t.TempDir(), Duration: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", r)
	if r.Size != 8192 {
		t.Errorf("size %d, want the 8 KiB default", r.Size)
	}
	sane(t, "ops", float64(r.Ops), 1e9)
	sane(t, "seconds", r.Seconds, windowLimit)
	sane(t, "ops/s", r.OpsPerSec, 1e7)
	sane(t, "µs per op", r.USPerOp, 1e6*r.Seconds)
	if d := r.OpsPerSec * r.USPerOp / 1e6; d < 0.99 || d > 1.01 {
		t.Errorf("ops/s × µs per op = %v, want 1", d)
	}
	entries, _ := os.ReadDir(r.Dir)
	if len(entries) != 0 {
		t.Errorf("left %d files in %s", len(entries), r.Dir)
	}
}

func TestHTTP(t *testing.T) {
	cfg := HTTPConfig{Rate: 500, Concurrency: 4, RequestSize: 300, ReplySize: 50, Duration: time.Second, Warmup: 200 * time.Millisecond}
	r, err := HTTP(context.Background(), testSpawner(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", r)
	// Requests were made and served in the window; how close their rate
	// came to the pace (500/s) depends on what else the machine ran.
	sane(t, "seconds", r.Seconds, windowLimit)
	if r.Requests <= 0 || r.Served <= 0 {
		t.Errorf("%d requests, %d served in the window", r.Requests, r.Served)
	}
	if want := float64(r.Requests) / r.Seconds; r.RequestRate < 0.999*want || r.RequestRate > 1.001*want {
		t.Errorf("request rate %.1f/s, but %d requests in %.3fs", r.RequestRate, r.Requests, r.Seconds)
	}
	sane(t, "client µs per request", r.USPerRequest, cpuLimit(r.Seconds, r.Requests))
	sane(t, "server µs per request", r.USPerServed, cpuLimit(r.Seconds, r.Served))
}

func TestRoundTrip(t *testing.T) {
	cfg := RoundTripConfig{Size: 64, Duration: time.Second, Warmup: 200 * time.Millisecond}
	r, err := RoundTrip(context.Background(), testSpawner(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", r)
	if r.Size != 64 {
		t.Errorf("config not carried into the result: %+v", r)
	}
	sane(t, "seconds", r.Seconds, windowLimit)
	// The client's trips and the server's answers in the window differ
	// by those made while the two readings were taken, one after the
	// other; on a busy machine that gap is any length: only both moving
	// is judged.
	if r.RoundTrips <= 0 || r.Answered <= 0 {
		t.Errorf("%d round trips, %d answered in the window", r.RoundTrips, r.Answered)
	}
	// The window's mean is its seconds over its round trips, so at most
	// its seconds; the trips go one at a time, so at least half of them
	// took p50 or more and p50 is at most twice the mean (and the trips
	// of the readings' gap, the same again).
	if want := 1e6 * r.Seconds / float64(r.RoundTrips); r.USMean < 0.999*want || r.USMean > 1.001*want {
		t.Errorf("mean %v µs, but %d round trips in %.3fs", r.USMean, r.RoundTrips, r.Seconds)
	}
	sane(t, "µs per round trip", r.USMean, 1e6*r.Seconds)
	sane(t, "p50 µs", r.USP50, 4*r.USMean)
	sane(t, "client µs of CPU", r.ClientUS, cpuLimit(r.Seconds, r.RoundTrips))
	sane(t, "server µs of CPU", r.ServerUS, cpuLimit(r.Seconds, r.Answered))
	if r.USP99 < r.USP50 {
		t.Errorf("p99 %v below p50 %v", r.USP99, r.USP50)
	}
	// A round trip's CPU on either end is part of its time: each end is
	// busy for less than the whole round trip.
	if r.ClientUS > 1.5*r.USMean || r.ServerUS > 1.5*r.USMean {
		t.Errorf("CPU per round trip (client %v, server %v µs) above its time %v µs", r.ClientUS, r.ServerUS, r.USMean)
	}
}

func TestBadConfig(t *testing.T) {
	if _, err := Loopback(context.Background(), testSpawner(t), LoopbackConfig{Sockets: 0, Rate: 1, Size: 1, Duration: time.Second}); err == nil {
		t.Error("Loopback accepted 0 sockets")
	}
	if _, err := Fsync(context.Background(), FsyncConfig{Duration: 0}); err == nil {
		t.Error("Fsync accepted a zero duration")
	}
	if _, err := RoundTrip(context.Background(), testSpawner(t), RoundTripConfig{Size: 0, Duration: time.Second}); err == nil {
		t.Error("RoundTrip accepted a size of 0")
	}
	if err := Child("nonsense", "{}", nil, nil); err == nil {
		t.Error("Child accepted an unknown role")
	}
}

// A dialing end whose work fails before the stop answers its next mark
// with the failure; an error its work returns once stopped (the halt's own)
// is not one.
func TestDrive(t *testing.T) {
	boom := errors.New("boom")
	inR, inW := io.Pipe()
	var out bytes.Buffer
	failedOnce := make(chan struct{})
	res := make(chan error, 1)
	go func() {
		res <- drive(inR, &out, func(<-chan struct{}) error { defer close(failedOnce); return boom }, nil,
			func() mark { return newMark(1) })
	}()
	io.WriteString(inW, "go\n")
	<-failedOnce
	io.WriteString(inW, "mark\n")
	inW.Close()
	if err := <-res; !errors.Is(err, boom) {
		t.Errorf("drive = %v after a failed work, want %v", err, boom)
	}
	if out.Len() != 0 {
		t.Errorf("a mark was written after the failure: %q", out.String())
	}

	halted := make(chan struct{})
	var marks bytes.Buffer
	err := drive(strings.NewReader("go\nmark\n"), &marks, func(stop <-chan struct{}) error {
		<-stop
		<-halted
		return os.ErrDeadlineExceeded
	}, func() { close(halted) }, func() mark { return newMark(7) })
	if err != nil {
		t.Errorf("drive = %v for an error after the stop", err)
	}
	if !strings.Contains(marks.String(), `"count":7`) {
		t.Errorf("mark not written: %q", marks.String())
	}
}
