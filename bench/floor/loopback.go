package floor

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"time"
)

// LoopbackConfig is one loopback measurement.
type LoopbackConfig struct {
	Sockets  int           `json:"sockets"`  // TCP connections on 127.0.0.1
	Rate     int           `json:"rate"`     // messages per second, all sockets together
	Size     int           `json:"size"`     // bytes per message (one write each)
	Duration time.Duration `json:"duration"` // measured
	Warmup   time.Duration `json:"warmup"`   // before the measured window
}

// LoopbackResult is what the two processes spent in the measured window.
type LoopbackResult struct {
	Sockets     int     `json:"sockets"`
	Rate        int     `json:"rate"`
	Size        int     `json:"size"`
	Seconds     float64 `json:"seconds"`
	Writes      int64   `json:"writes"`
	Reads       int64   `json:"messages_read"`
	WriteRate   float64 `json:"writes_per_second"`
	SenderCPU   float64 `json:"sender_cpu_seconds"`
	ReceiverCPU float64 `json:"receiver_cpu_seconds"`
	USPerWrite  float64 `json:"us_per_write"` // sender CPU per write
	USPerRead   float64 `json:"us_per_read"`  // receiver CPU per message read
}

func (c LoopbackConfig) check() error {
	if c.Sockets < 1 || c.Rate < 1 || c.Size < 1 || c.Duration <= 0 || c.Warmup < 0 {
		return fmt.Errorf("%w: loopback needs sockets, rate, size and duration > 0 (got %+v)", errConfig, c)
	}
	return nil
}

// Loopback measures the CPU of writing and of reading one message on
// loopback TCP, each end in its own process.
func Loopback(ctx context.Context, spawn Spawner, cfg LoopbackConfig) (LoopbackResult, error) {
	res := LoopbackResult{Sockets: cfg.Sockets, Rate: cfg.Rate, Size: cfg.Size}
	if err := cfg.check(); err != nil {
		return res, err
	}
	d, _, err := pair(ctx, spawn, roleLoopbackRecv, cfg, roleLoopbackSend,
		func(addr string) any { return senderConfig{LoopbackConfig: cfg, Addr: addr} }, cfg.Warmup, cfg.Duration)
	if err != nil {
		return res, err
	}
	res.Seconds, res.Writes, res.Reads, res.SenderCPU, res.ReceiverCPU = d.Seconds, d.Count[0], d.Count[1], d.CPU[0], d.CPU[1]
	if res.Seconds > 0 {
		res.WriteRate = float64(res.Writes) / res.Seconds
	}
	if res.Writes <= 0 || res.Reads <= 0 {
		return res, fmt.Errorf("floor: loopback moved no messages in %.1fs (%d written, %d read)", res.Seconds, res.Writes, res.Reads)
	}
	res.USPerWrite = 1e6 * res.SenderCPU / float64(res.Writes)
	res.USPerRead = 1e6 * res.ReceiverCPU / float64(res.Reads)
	return res, nil
}

// loopbackReceiver accepts cfg.Sockets connections and reads them, each
// in its own goroutine, counting whole messages.
func loopbackReceiver(cfg LoopbackConfig, in io.Reader, out io.Writer) error {
	var bytes atomic.Int64
	return serveConns(in, out, func(c net.Conn) {
		buf := make([]byte, 4096)
		for {
			n, err := c.Read(buf)
			bytes.Add(int64(n))
			if err != nil {
				return
			}
		}
	}, func() int64 { return bytes.Load() / int64(cfg.Size) })
}

type senderConfig struct {
	LoopbackConfig
	Addr string `json:"addr"`
}

// loopbackSender dials cfg.Sockets connections, then on "go" writes
// cfg.Size-byte messages round-robin at cfg.Rate per second from one
// goroutine, catching up in batches every 2 ms (few wake-ups per write).
func loopbackSender(cfg senderConfig, in io.Reader, out io.Writer) error {
	conns := make([]net.Conn, 0, cfg.Sockets)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range cfg.Sockets {
		c, err := net.Dial("tcp", cfg.Addr)
		if err != nil {
			return err
		}
		conns = append(conns, c)
	}
	if err := writeJSON(out, map[string]int{"connected": len(conns)}); err != nil {
		return err
	}
	var writes atomic.Int64
	msg := message(cfg.Size)
	pace := func(stop <-chan struct{}) error {
		t0 := time.Now()
		var sent int64
		next := 0
		for {
			select {
			case <-stop:
				return nil
			default:
			}
			due := int64(time.Since(t0).Seconds() * float64(cfg.Rate))
			for ; sent < due; sent++ {
				if _, err := conns[next].Write(msg); err != nil {
					return err
				}
				writes.Add(1)
				next++
				if next == len(conns) {
					next = 0
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	return drive(in, out, pace, nil, func() mark { return newMark(writes.Load()) })
}
