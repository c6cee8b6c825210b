package netfault

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
)

// echo is a line echo server on loopback.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends a line through the link and waits up to d for it back.
func roundTrip(addr string, d time.Duration) (time.Duration, error) {
	start := time.Now()
	c, err := net.DialTimeout("tcp", addr, d)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(d))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return 0, err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return 0, err
	}
	if line != "ping\n" {
		return 0, errors.New("wrong echo " + line)
	}
	return time.Since(start), nil
}

func TestFaults(t *testing.T) {
	l, err := Listen(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := roundTrip(l.Addr, time.Second); err != nil {
		t.Fatalf("healthy link: %v", err)
	}
	for _, tc := range []struct {
		f     Fault
		check func(time.Duration, error) bool
		want  string
	}{
		{Blackhole, func(_ time.Duration, err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }, "no answer (deadline)"},
		{Timeout, func(_ time.Duration, err error) bool { return err != nil }, "an error"},
		{ResetPeer, func(_ time.Duration, err error) bool { return err != nil && !errors.Is(err, os.ErrDeadlineExceeded) }, "a reset, at once"},
		{Latency, func(d time.Duration, err error) bool { return err == nil && d >= 250*time.Millisecond }, "an echo after >= 250 ms"},
		{Bandwidth, func(_ time.Duration, err error) bool { return err == nil }, "an echo"},
	} {
		if err := l.Apply(tc.f); err != nil {
			t.Fatal(err)
		}
		// A blackhole is known by its deadline running out; every other
		// fault answers by itself, and its deadline is a hang detector.
		limit := 30 * time.Second
		if tc.f.Name == Blackhole.Name {
			limit = 1500 * time.Millisecond
		}
		d, err := roundTrip(l.Addr, limit)
		if !tc.check(d, err) {
			t.Errorf("%s: took %s, err %v; want %s", tc.f.Name, d, err, tc.want)
		}
		if err := l.Heal(); err != nil {
			t.Fatal(err)
		}
		if _, err := roundTrip(l.Addr, time.Second); err != nil {
			t.Errorf("after %s healed: %v", tc.f.Name, err)
		}
	}
	// Flapping: some round trips of 100 ms deadline fail, some pass (on
	// a busy machine it may take more tries to see both: the minute is a
	// hang detector).
	if err := l.Apply(Flapping); err != nil {
		t.Fatal(err)
	}
	ok, failed := 0, 0
	for deadline := time.Now().Add(time.Minute); (ok == 0 || failed == 0) && time.Now().Before(deadline); {
		if _, err := roundTrip(l.Addr, 100*time.Millisecond); err == nil {
			ok++
		} else {
			failed++
		}
	}
	_ = l.Heal()
	if ok == 0 || failed == 0 {
		t.Errorf("flapping: %d round trips passed, %d failed; want some of each", ok, failed)
	}
	if _, err := Parse(""); err == nil {
		t.Error("Parse(\"\") accepted")
	}
}

func TestThroughLinks(t *testing.T) {
	l := &Link{Addr: "127.0.0.1:7000"}
	got, err := ThroughLinks("postgres://u@127.0.0.1:5432/db?sslmode=disable", map[string]*Link{"127.0.0.1:5432": l})
	if err != nil || got != "postgres://u@127.0.0.1:7000/db?sslmode=disable" {
		t.Errorf("got %q, %v", got, err)
	}
	m := &Link{Addr: "127.0.0.1:7001"}
	got, err = ThroughLinks("postgres://u@127.0.0.1:5432,127.0.0.1:5433/db?target_session_attrs=read-write",
		map[string]*Link{"127.0.0.1:5432": l, "127.0.0.1:5433": m})
	if err != nil || got != "postgres://u@127.0.0.1:7000,127.0.0.1:7001/db?target_session_attrs=read-write" {
		t.Errorf("multi-host: got %q, %v", got, err)
	}
	got, err = ThroughLinks("host=127.0.0.1,127.0.0.1 port=5432,5433 user=postgres target_session_attrs=read-write dbname='x'",
		map[string]*Link{"127.0.0.1:5432": l, "127.0.0.1:5433": m})
	if err != nil || got != "host=127.0.0.1,127.0.0.1 port=7000,7001 user=postgres target_session_attrs=read-write dbname='x'" {
		t.Errorf("keyword DSN: got %q, %v", got, err)
	}
	if _, err := ThroughLinks("postgres://u@127.0.0.1:5433/db", map[string]*Link{"127.0.0.1:5432": l}); err == nil {
		t.Error("a host without a link was accepted")
	}
}

// Connections still sending when a fault that drops bytes closes them
// (at its heal, or after its timeout) leave no goroutine behind in the
// proxy: with toxiproxy's own timeout toxic, the toxic before it blocked
// forever passing on a chunk that arrived meanwhile, and a long run
// through many faults counted those goroutines as growth.
func TestClosedConnectionsLeaveNoGoroutines(t *testing.T) {
	l, err := Listen(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	time.Sleep(50 * time.Millisecond)
	base := runtime.NumGoroutine()
	for round := range 6 {
		f := []Fault{Blackhole, Timeout, Flapping}[round%3]
		var wg sync.WaitGroup
		var conns []net.Conn
		for range 8 {
			c, err := net.Dial("tcp", l.Addr)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
			wg.Go(func() { _, _ = io.Copy(io.Discard, c) })
			wg.Go(func() {
				for {
					if _, err := c.Write([]byte("ping\n")); err != nil {
						return
					}
					time.Sleep(200 * time.Microsecond)
				}
			})
		}
		time.Sleep(50 * time.Millisecond)
		if err := l.Apply(f); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1200 * time.Millisecond) // past Timeout's 1 s
		if err := l.Heal(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // still sending when the heal closes them
		for _, c := range conns {
			c.Close()
		}
		wg.Wait()
	}
	n := 0
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) { // a hang detector
		if n = runtime.NumGoroutine(); n <= base {
			return
		}
	}
	buf := make([]byte, 1<<20)
	t.Fatalf("%d goroutines after the connections closed, %d before:\n%s", n, base, buf[:runtime.Stack(buf, true)])
}
