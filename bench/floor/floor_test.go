package floor

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
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

// sane fails unless v is positive and below limit (a figure of the wrong
// unit, or a clock or counter mix-up, lands outside).
func sane(t *testing.T, what string, v, limit float64) {
	t.Helper()
	if !(v > 0 && v < limit) {
		t.Errorf("%s = %v, want in (0, %v)", what, v, limit)
	}
}

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
	sane(t, "seconds", r.Seconds, 10)
	// Paced at 2,000/s: the measured window saw about that (a starved
	// machine falls behind, never ahead by much).
	if r.WriteRate < 200 || r.WriteRate > 2600 {
		t.Errorf("write rate %.0f/s, want about 2000", r.WriteRate)
	}
	// Both marks see the same stream: reads trail writes by what is in
	// flight (a stall of the reader on a crowded machine, at most).
	if d := r.Writes - r.Reads; d < -max(200, r.Writes/5) || d > max(200, r.Writes/5) {
		t.Errorf("%d written, %d read in the same window", r.Writes, r.Reads)
	}
	// A write or read of 200 bytes on loopback costs microseconds, not
	// nanoseconds and not milliseconds (a 2-core VM: 10 µs).
	sane(t, "µs per write", r.USPerWrite, 2000)
	sane(t, "µs per read", r.USPerRead, 2000)
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
	sane(t, "ops/s", r.OpsPerSec, 1e7)
	sane(t, "µs per op", r.USPerOp, 1e6)
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
	if r.RequestRate < 50 || r.RequestRate > 700 {
		t.Errorf("request rate %.0f/s, want about 500", r.RequestRate)
	}
	sane(t, "client µs per request", r.USPerRequest, 20000)
	sane(t, "server µs per request", r.USPerServed, 20000)
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
	sane(t, "seconds", r.Seconds, 10)
	// One at a time: the client's trips and the server's answers in the
	// same window differ by those made while the two readings were taken,
	// one after the other.
	if d := r.RoundTrips - r.Answered; d < -max(20, r.RoundTrips/50) || d > max(20, r.RoundTrips/50) {
		t.Errorf("%d round trips, %d answered in the same window", r.RoundTrips, r.Answered)
	}
	// A loopback round trip takes microseconds to milliseconds, never
	// less than the syscalls it makes.
	sane(t, "µs per round trip", r.USMean, 100000)
	sane(t, "p50 µs", r.USP50, 100000)
	sane(t, "client µs of CPU", r.ClientUS, 100000)
	sane(t, "server µs of CPU", r.ServerUS, 100000)
	if r.USP99 < r.USP50 {
		t.Errorf("p99 %v below p50 %v", r.USP99, r.USP50)
	}
	// The window's mean is its seconds over its round trips; the client's
	// own timings agree with it within the spread of one machine's noise.
	if r.USP50 > 20*r.USMean || r.USMean > 20*r.USP99 {
		t.Errorf("client timings (p50 %v, p99 %v) far from the window's mean %v", r.USP50, r.USP99, r.USMean)
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
