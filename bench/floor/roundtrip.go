package floor

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/subspace/kbkit/loadgen/metrics"
)

// RoundTripConfig is one round-trip measurement.
type RoundTripConfig struct {
	Size     int           `json:"size"`     // bytes each way
	Duration time.Duration `json:"duration"` // measured
	Warmup   time.Duration `json:"warmup"`   // before the measured window
}

// RoundTripResult is the latency of one message and its answer between
// two processes, one at a time, and what each end spent on it.
type RoundTripResult struct {
	Size       int     `json:"size"`
	Seconds    float64 `json:"seconds"`
	RoundTrips int64   `json:"round_trips"`
	Answered   int64   `json:"answered"`
	ClientCPU  float64 `json:"client_cpu_seconds"`
	ServerCPU  float64 `json:"server_cpu_seconds"`
	// USMean is the window's time per round trip (one at a time, so the
	// mean latency); USP50 and USP99 are the client's own timings of the
	// round trips completed in the window.
	USMean float64 `json:"us_per_round_trip"`
	USP50  float64 `json:"p50_us"`
	USP99  float64 `json:"p99_us"`
	// CPU of each end per round trip: a write and a read each, and the
	// wake-ups between.
	ClientUS float64 `json:"client_us_per_round_trip"`
	ServerUS float64 `json:"server_us_per_round_trip"`
}

func (c RoundTripConfig) check() error {
	if c.Size < 1 || c.Duration <= 0 || c.Warmup < 0 {
		return fmt.Errorf("%w: roundtrip needs size and duration > 0 (got %+v)", errConfig, c)
	}
	return nil
}

// RoundTrip measures the latency of a message and its answer on one
// loopback TCP connection between two processes, the next sent when the
// answer is in: nothing else runs, so it is the machine's cost of waking
// a process that waits on a socket, twice, and of the two writes and
// reads. Every closed-loop caller pays it once per operation (pgbench's
// client once per statement).
func RoundTrip(ctx context.Context, spawn Spawner, cfg RoundTripConfig) (RoundTripResult, error) {
	res := RoundTripResult{Size: cfg.Size}
	if err := cfg.check(); err != nil {
		return res, err
	}
	d, last, err := pair(ctx, spawn, roleRoundTripServer, cfg, roleRoundTripClient,
		func(addr string) any { return roundTripClientConfig{RoundTripConfig: cfg, Addr: addr} }, cfg.Warmup, cfg.Duration)
	if err != nil {
		return res, err
	}
	res.Seconds, res.RoundTrips, res.Answered, res.ClientCPU, res.ServerCPU = d.Seconds, d.Count[0], d.Count[1], d.CPU[0], d.CPU[1]
	if res.RoundTrips <= 0 || res.Answered <= 0 {
		return res, fmt.Errorf("floor: roundtrip completed none in %.1fs (%d sent back, %d answered)", res.Seconds, res.RoundTrips, res.Answered)
	}
	if last[0].Latency == nil {
		return res, fmt.Errorf("floor: the roundtrip client's reading has no latencies")
	}
	res.USMean = 1e6 * res.Seconds / float64(res.RoundTrips)
	res.USP50, res.USP99 = last[0].Latency.P50, last[0].Latency.P99
	res.ClientUS = 1e6 * res.ClientCPU / float64(res.RoundTrips)
	res.ServerUS = 1e6 * res.ServerCPU / float64(res.Answered)
	return res, nil
}

// roundTripServer accepts a connection and writes back every cfg.Size
// bytes it reads, counting the answers.
func roundTripServer(cfg RoundTripConfig, in io.Reader, out io.Writer) error {
	var answered atomic.Int64
	return serveConns(in, out, func(c net.Conn) {
		buf := make([]byte, cfg.Size)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
			answered.Add(1)
		}
	}, answered.Load)
}

type roundTripClientConfig struct {
	RoundTripConfig
	Addr string `json:"addr"`
}

// roundTripClient dials the server, then on "go" sends cfg.Size bytes,
// reads the answer and sends again, timing each round trip. A "mark"
// answers the count and the latencies since the previous mark.
func roundTripClient(cfg roundTripClientConfig, in io.Reader, out io.Writer) error {
	c, err := net.Dial("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := writeJSON(out, map[string]bool{"connected": true}); err != nil {
		return err
	}
	var (
		trips atomic.Int64
		mu    sync.Mutex
		hist  = metrics.NewHist()
	)
	msg, buf := message(cfg.Size), make([]byte, cfg.Size)
	loop := func(stop <-chan struct{}) error {
		for {
			select {
			case <-stop:
				return nil
			default:
			}
			t0 := time.Now()
			if _, err := c.Write(msg); err != nil {
				return err
			}
			if _, err := io.ReadFull(c, buf); err != nil {
				return err
			}
			d := time.Since(t0)
			mu.Lock()
			hist.Record(d)
			mu.Unlock()
			trips.Add(1)
		}
	}
	// The stop's deadline ends a read waiting for an answer.
	halt := func() { _ = c.SetDeadline(time.Now()) }
	return drive(in, out, loop, halt, func() mark {
		m := newMark(trips.Load())
		mu.Lock()
		defer mu.Unlock()
		if hist.Count() > 0 {
			m.Latency = &latency{P50: float64(hist.Quantile(50).Microseconds()), P99: float64(hist.Quantile(99).Microseconds())}
		}
		hist = metrics.NewHist()
		return m
	})
}
