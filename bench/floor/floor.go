package floor

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"sync"
	"time"

	"github.com/subspace/kbkit/internal/cputime"
)

// A Spawner makes the command that runs Child(role, config, stdin, stdout)
// in a new process. The caller of Loopback or HTTP owns nothing of it: its
// Stdin and Stdout are set here (Stderr is left as the Spawner set it).
type Spawner func(role, config string) *exec.Cmd

// Roles of the child processes.
const (
	roleLoopbackRecv    = "loopback-recv"
	roleLoopbackSend    = "loopback-send"
	roleHTTPServer      = "http-server"
	roleHTTPClient      = "http-client"
	roleRoundTripServer = "roundtrip-server"
	roleRoundTripClient = "roundtrip-client"
)

// mark is a child's reading, printed on "mark": its CPU, its count of
// operations (writes, messages read, requests) and its clock; a child
// that times its operations adds their latencies since its last mark.
type mark struct {
	CPU     float64  `json:"cpu_s"`
	Count   int64    `json:"count"`
	T       float64  `json:"t"`
	Latency *latency `json:"latency_us,omitempty"`
}

// span is what the two children of a pair did between their two
// readings: the dialing end's count and CPU first, the listening end's
// second (the order pair returns their marks in).
type span struct {
	Seconds float64
	Count   [2]int64
	CPU     [2]float64
}

func between(a, b []mark) span {
	return span{
		Seconds: b[0].T - a[0].T,
		Count:   [2]int64{b[0].Count - a[0].Count, b[1].Count - a[1].Count},
		CPU:     [2]float64{b[0].CPU - a[0].CPU, b[1].CPU - a[1].CPU},
	}
}

// latency is a child's percentiles, in microseconds.
type latency struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

func newMark(count int64) mark {
	return mark{CPU: cputime.Seconds(), Count: count, T: float64(time.Now().UnixNano()) / 1e9}
}

// child is a running child process seen from the parent: its stdin for
// commands, its stdout's lines for replies.
type child struct {
	role string
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
}

func start(spawn Spawner, role string, config any) (*child, error) {
	cfg, err := json.Marshal(config)
	if err != nil {
		return nil, err
	}
	cmd := spawn(role, string(cfg))
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("floor: starting the %s process: %w", role, err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	return &child{role: role, cmd: cmd, in: in, out: sc}, nil
}

// reply reads the child's next line into v.
func (c *child) reply(v any) error {
	if !c.out.Scan() {
		err := c.out.Err()
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("floor: the %s process stopped answering: %w", c.role, err)
	}
	if err := json.Unmarshal(c.out.Bytes(), v); err != nil {
		return fmt.Errorf("floor: the %s process answered %q: %w", c.role, c.out.Text(), err)
	}
	return nil
}

// send writes one command line to the child.
func (c *child) send(command string) error {
	_, err := io.WriteString(c.in, command+"\n")
	return err
}

// mark asks the child for a reading.
func (c *child) mark() (mark, error) {
	var m mark
	if err := c.send("mark"); err != nil {
		return m, err
	}
	return m, c.reply(&m)
}

// stop closes the child's stdin (its signal to exit) and waits for it,
// killing it if it takes more than 10 s.
func (c *child) stop() error {
	_ = c.in.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
		return fmt.Errorf("floor: the %s process did not exit", c.role)
	}
}

// pair runs a measurement between two children: the listening one (role
// listen with listenCfg) answers its address, the other (role dial, with
// the config dialCfg makes of that address) answers when it is ready,
// is told "go", and both are measured over a window of warmup then
// duration: what they did in it, and their last readings (the dialing
// end's first).
func pair(ctx context.Context, spawn Spawner, listen string, listenCfg any, dial string, dialCfg func(addr string) any, warmup, duration time.Duration) (span, []mark, error) {
	srv, err := start(spawn, listen, listenCfg)
	if err != nil {
		return span{}, nil, err
	}
	defer srv.stop()
	var up struct {
		Addr string `json:"addr"`
	}
	if err := srv.reply(&up); err != nil {
		return span{}, nil, err
	}
	cl, err := start(spawn, dial, dialCfg(up.Addr))
	if err != nil {
		return span{}, nil, err
	}
	defer cl.stop()
	var ready json.RawMessage
	if err := cl.reply(&ready); err != nil {
		return span{}, nil, err
	}
	if err := cl.send("go"); err != nil {
		return span{}, nil, err
	}
	a, b, err := window(ctx, warmup, duration, cl, srv)
	if err != nil {
		return span{}, nil, err
	}
	return between(a, b), b, nil
}

// window takes two readings of each child, Warmup apart from the start and
// Duration apart from each other (or until ctx ends).
func window(ctx context.Context, warmup, duration time.Duration, children ...*child) (a, b []mark, err error) {
	sleep := func(d time.Duration) error {
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := sleep(warmup); err != nil {
		return nil, nil, err
	}
	read := func() ([]mark, error) {
		ms := make([]mark, len(children))
		for i, c := range children {
			m, err := c.mark()
			if err != nil {
				return nil, err
			}
			ms[i] = m
		}
		return ms, nil
	}
	if a, err = read(); err != nil {
		return nil, nil, err
	}
	if err := sleep(duration); err != nil {
		return nil, nil, err
	}
	if b, err = read(); err != nil {
		return nil, nil, err
	}
	return a, b, nil
}

// Child runs one end of a floor in this process: role and config as the
// Spawner was given them, commands on in, replies on out. It returns when
// in is closed (or on an error).
func Child(role, config string, in io.Reader, out io.Writer) error {
	switch role {
	case roleLoopbackRecv:
		return runChild(config, in, out, loopbackReceiver)
	case roleLoopbackSend:
		return runChild(config, in, out, loopbackSender)
	case roleHTTPServer:
		return runChild(config, in, out, httpServer)
	case roleHTTPClient:
		return runChild(config, in, out, httpClient)
	case roleRoundTripServer:
		return runChild(config, in, out, roundTripServer)
	case roleRoundTripClient:
		return runChild(config, in, out, roundTripClient)
	}
	return fmt.Errorf("floor: unknown child role %q", role)
}

// runChild decodes a child's configuration and runs its end.
func runChild[C any](config string, in io.Reader, out io.Writer, run func(C, io.Reader, io.Writer) error) error {
	var cfg C
	if err := json.Unmarshal([]byte(config), &cfg); err != nil {
		return fmt.Errorf("floor: the child's configuration %q: %w", config, err)
	}
	return run(cfg, in, out)
}

// serveConns is the listening end of a pair on loopback TCP: it answers
// its address, runs handle on each connection accepted (each in its own
// goroutine), answers "mark" with count(), and when in ends closes the
// listener and every connection and waits for the handlers.
func serveConns(in io.Reader, out io.Writer, handle func(net.Conn), count func() int64) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		conns  []net.Conn
		closed bool
	)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if closed {
				mu.Unlock()
				c.Close()
				return
			}
			conns = append(conns, c)
			wg.Go(func() { handle(c) })
			mu.Unlock()
		}
	}()
	if err := writeJSON(out, map[string]string{"addr": ln.Addr().String()}); err != nil {
		return err
	}
	err = commands(in, func(cmd string) error {
		if cmd == "mark" {
			return writeJSON(out, newMark(count()))
		}
		return nil
	})
	ln.Close()
	mu.Lock()
	closed = true
	for _, c := range conns {
		c.Close()
	}
	mu.Unlock()
	wg.Wait()
	return err
}

// drive is the dialing end of a pair once it is ready: on "go" it starts
// work in its own goroutine (once), on "mark" it answers mark(), or the
// error that ended work early; when in ends it closes work's stop, calls
// halt (if set: to end a call that blocks, such as a read waiting for an
// answer), and waits for work. An error work returns once stopped is the
// stop's own, not a failure.
func drive(in io.Reader, out io.Writer, work func(stop <-chan struct{}) error, halt func(), mark func() mark) error {
	stop := make(chan struct{})
	done := make(chan struct{})
	var (
		mu      sync.Mutex
		stopped bool
		failed  error
	)
	started := false
	err := commands(in, func(cmd string) error {
		switch cmd {
		case "go":
			if !started {
				started = true
				go func() {
					defer close(done)
					if err := work(stop); err != nil {
						mu.Lock()
						if !stopped {
							failed = err
						}
						mu.Unlock()
					}
				}()
			}
		case "mark":
			mu.Lock()
			e := failed
			mu.Unlock()
			if e != nil {
				return e
			}
			return writeJSON(out, mark())
		}
		return nil
	})
	if !started {
		return err
	}
	mu.Lock()
	stopped = true
	mu.Unlock()
	close(stop)
	if halt != nil {
		halt()
	}
	<-done
	if err == nil {
		err = failed
	}
	return err
}

// message is n bytes of letters, what the dialing ends write.
func message(n int) []byte {
	msg := make([]byte, n)
	for i := range msg {
		msg[i] = 'a' + byte(i%26)
	}
	return msg
}

// commands calls on for each line read from in until in ends.
func commands(in io.Reader, on func(string) error) error {
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		if err := on(sc.Text()); err != nil {
			return err
		}
	}
	return sc.Err()
}

// writeJSON prints v as one line.
func writeJSON(out io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = out.Write(append(b, '\n'))
	return err
}

var errConfig = errors.New("floor: bad configuration")
