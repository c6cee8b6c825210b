package adapter

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/subspace/kbkit/internal/syncio"

	"github.com/subspace/kbkit/speckit/cases"

	"github.com/subspace/kbkit/internal/procs"
)

// InitTimeout is the least time an adapter has to answer init, whatever
// Options.Timeout: its process is starting.
const InitTimeout = 10 * time.Second

// Options configure Start.
type Options struct {
	// Timeout bounds each request, from writing it to reading its reply
	// (init: at least InitTimeout). Default 10s.
	Timeout time.Duration
	// Stderr receives the adapter's stderr, line by line, each line
	// prefixed with StderrPrefix. Default os.Stderr.
	Stderr       io.Writer
	StderrPrefix string // default "[adapter] "
	// Dir and Env are the child's working directory and environment
	// (defaults: ours).
	Dir string
	Env []string
	// Self is the executable to run when the command's first word is
	// "kbkit" and no kbkit is on PATH (the kbkit CLI sets it to itself).
	Self string
	// MaxFailures is how many transport failures in a row (crash, timeout,
	// protocol error, failed restart) are tolerated before the client stops
	// restarting the adapter and fails every later request of the same
	// budget (SetBudget) at once. Default 5.
	MaxFailures int
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.StderrPrefix == "" {
		o.StderrPrefix = "[adapter] "
	}
	if o.MaxFailures <= 0 {
		o.MaxFailures = 5
	}
	return o
}

// Client is a running adapter. It implements cases.Impl, cases.Planner
// and cases.Canonicalizer;
// requests are sent one at a time. It is safe for concurrent use (requests
// are serialised).
type Client struct {
	argv []string
	opts Options
	errW *syncio.Writer

	mu       sync.Mutex
	p        *proc
	info     Info
	nextID   int64
	starts   int
	budget   string           // SetBudget's key
	failures map[string]int   // transport failures in a row, by budget
	gaveUp   map[string]error // set once failures reached MaxFailures
}

var (
	_ cases.Impl          = (*Client)(nil)
	_ cases.Planner       = (*Client)(nil)
	_ cases.Canonicalizer = (*Client)(nil)
)

// Start spawns the adapter argv (argv[0] is looked up on PATH), sends init
// and waits for init_ok. The returned client restarts the adapter (with a
// new init) on the request after one that crashed it, timed out or got a
// malformed reply.
func Start(ctx context.Context, argv []string, opts Options) (*Client, error) {
	if len(argv) == 0 {
		return nil, errors.New("adapter: empty command")
	}
	opts = opts.withDefaults()
	argv = append([]string(nil), argv...)
	if argv[0] == "kbkit" && opts.Self != "" {
		if _, err := exec.LookPath("kbkit"); err != nil {
			argv[0] = opts.Self
		}
	}
	c := &Client{argv: argv, opts: opts, errW: &syncio.Writer{W: opts.Stderr},
		failures: map[string]int{}, gaveUp: map[string]error{}}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.start(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// Info is what the adapter said in init_ok (after the latest restart).
func (c *Client) Info() Info {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.info
}

// Restarts is how many times the adapter was restarted after a failure.
func (c *Client) Restarts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return max(c.starts-1, 0)
}

// Close ends the adapter: it closes its stdin, gives it a moment to exit
// and kills it otherwise.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.p == nil {
		return nil
	}
	p := c.p
	c.p = nil
	_ = p.stdin.Close()
	select {
	case <-p.readerDone:
	case <-time.After(2 * time.Second):
	}
	p.kill()
	return nil
}

// Apply sends `apply`.
func (c *Client) Apply(ctx context.Context, doc, cmd json.RawMessage) (cases.ApplyReply, error) {
	info := c.Info()
	if !info.Supports(cases.SuiteCommands) {
		return cases.ApplyReply{}, fmt.Errorf("%w: the adapter does not list suite %q", cases.ErrNotSupported, cases.SuiteCommands)
	}
	if info.Commands != nil {
		var head struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(cmd, &head)
		if !info.SupportsCommand(head.Type) {
			return cases.ApplyReply{}, fmt.Errorf("%w: the adapter does not list command %q", cases.ErrNotSupported, head.Type)
		}
	}
	var r cases.ApplyReply
	if err := c.call(ctx, TypeApply, applyRequest{Doc: doc, Cmd: cmd}, &r); err != nil {
		return r, err
	}
	if isNull(r.Doc) && r.Rejected == nil {
		return r, fmt.Errorf("%w: apply_ok has neither doc nor rejected", ErrProtocol)
	}
	return r, nil
}

// Tokenize sends `tokenize`.
func (c *Client) Tokenize(ctx context.Context, req cases.TokenizeRequest) (cases.TokenizeReply, error) {
	if !c.Info().Supports(cases.SuiteTokenizer) {
		return cases.TokenizeReply{}, fmt.Errorf("%w: the adapter does not list suite %q", cases.ErrNotSupported, cases.SuiteTokenizer)
	}
	var r cases.TokenizeReply
	err := c.call(ctx, TypeTokenize, req, &r)
	return r, err
}

// Window sends `window`.
func (c *Client) Window(ctx context.Context, req cases.WindowRequest) ([]cases.WindowState, error) {
	if !c.Info().Supports(cases.SuiteWindow) {
		return nil, fmt.Errorf("%w: the adapter does not list suite %q", cases.ErrNotSupported, cases.SuiteWindow)
	}
	if req.Steps == nil {
		req.Steps = []json.RawMessage{} // the schema's steps is an array: an empty script is []
	}
	var r windowReply
	if err := c.call(ctx, TypeWindow, req, &r); err != nil {
		return nil, err
	}
	if r.States == nil {
		return nil, fmt.Errorf("%w: window_ok has no states", ErrProtocol)
	}
	return *r.States, nil
}

// Plan sends `plan`.
func (c *Client) Plan(ctx context.Context, req cases.PlanRequest) (cases.PlanReply, error) {
	if !c.Info().Supports(cases.SuitePlanner) {
		return cases.PlanReply{}, fmt.Errorf("%w: the adapter does not list suite %q", cases.ErrNotSupported, cases.SuitePlanner)
	}
	var r cases.PlanReply
	err := c.call(ctx, TypePlan, req, &r)
	return r, err
}

// Canonical sends `canonical`, its doc or value as the case writes it.
func (c *Client) Canonical(ctx context.Context, req cases.CanonicalRequest) (string, error) {
	info := c.Info()
	if !info.Supports(cases.SuiteCanonical) {
		return "", fmt.Errorf("%w: the adapter does not list suite %q", cases.ErrNotSupported, cases.SuiteCanonical)
	}
	if info.Protocol < ProtocolCanonical {
		return "", fmt.Errorf("%w: suite %q needs protocol %d, the session speaks %d", cases.ErrNotSupported, cases.SuiteCanonical, ProtocolCanonical, info.Protocol)
	}
	key, in := "doc", req.Doc
	if req.Doc == nil {
		key, in = "value", req.Value
	}
	var b bytes.Buffer
	if err := json.Compact(&b, in); err != nil {
		return "", fmt.Errorf("canonical: %s: %v", key, err)
	}
	body := rawBody(append(append([]byte(`{"`+key+`":`), b.Bytes()...), '}'))
	var r canonicalReply
	if err := c.call(ctx, TypeCanonical, body, &r); err != nil {
		return "", err
	}
	if r.Text == nil {
		return "", fmt.Errorf("%w: canonical_ok has no text", ErrProtocol)
	}
	return *r.Text, nil
}

func isNull(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) == 0 || string(b) == "null"
}

// call sends one request and decodes its `<typ>_ok` reply into reply. It
// restarts the adapter first if the previous request killed it.
func (c *Client) call(ctx context.Context, typ string, body, reply any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.p == nil {
		if err := c.gaveUp[c.budget]; err != nil {
			return err
		}
		if err := c.start(ctx); err != nil {
			c.failed(err)
			return fmt.Errorf("restarting the adapter: %w", err)
		}
	}
	err := c.roundTrip(ctx, typ, body, reply)
	var fatal *transportError
	if errors.As(err, &fatal) {
		c.p.kill()
		c.p = nil
		c.failed(fatal.err)
		return fatal.err
	}
	c.failures[c.budget] = 0
	return err
}

// SetBudget makes the requests that follow count their failures against
// the budget named key (kbkit spec run: the suite): after MaxFailures in a
// row in one budget, its requests fail at once, while those of other
// budgets still restart the adapter. The default budget is "".
func (c *Client) SetBudget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.budget = key
}

func (c *Client) failed(err error) {
	c.failures[c.budget]++
	if n := c.failures[c.budget]; n >= c.opts.MaxFailures {
		c.gaveUp[c.budget] = fmt.Errorf("%w after %d failures in a row (last: %v)", ErrGaveUp, n, err)
	}
}

// start spawns the process and runs init. c.mu is held.
func (c *Client) start(ctx context.Context) error {
	p, err := c.spawn()
	if err != nil {
		return err
	}
	c.p = p
	c.starts++
	info, err := c.handshake(ctx)
	if err != nil {
		var t *transportError
		if errors.As(err, &t) {
			err = t.err
		}
		p.kill() // waits for its stderr
		c.p = nil
		if first := p.firstStderr(); first != "" {
			return fmt.Errorf("init: %w; the adapter's first stderr line: %q", err, first)
		}
		return fmt.Errorf("init: %w", err)
	}
	c.info = info
	return nil
}

// handshake sends init offering every protocol version the runner speaks
// and settles on the newest the adapter accepts (spec/ADAPTER.md 3,
// init): the adapter names it in init_ok's protocol, or accepts the
// protocol init proposed; an adapter that answers error 10 (it does not
// speak the proposed version) gets init again with the next older one.
// c.mu is held.
func (c *Client) handshake(ctx context.Context) (Info, error) {
	var refused []string
	for v := Protocol; v >= 1; v-- {
		var info Info
		err := c.roundTrip(ctx, TypeInit, initRequest{Protocol: v, Protocols: Protocols()}, &info)
		var re *RemoteError
		if errors.As(err, &re) && re.Code == CodeNotSupported {
			refused = append(refused, fmt.Sprintf("protocol %d: %s", v, re.Text))
			continue
		}
		if err != nil {
			return Info{}, err
		}
		if info.Suites == nil {
			return Info{}, fmt.Errorf("%w: init_ok has no suites", ErrProtocol)
		}
		switch {
		case info.Protocol == 0:
			info.Protocol = v
		case info.Protocol < 1 || info.Protocol > v:
			return Info{}, fmt.Errorf("%w: init_ok chose protocol %d, not one of 1 to %d offered", ErrProtocol, info.Protocol, v)
		}
		return info, nil
	}
	return Info{}, fmt.Errorf("the adapter speaks none of the protocol versions 1 to %d this kbkit speaks (%s)", Protocol, strings.Join(refused, "; "))
}

// transportError marks errors after which the process is killed.
type transportError struct{ err error }

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

func (c *Client) roundTrip(ctx context.Context, typ string, body, reply any) error {
	p := c.p
	c.nextID++
	id := c.nextID
	line, err := flat(typ, "msg_id", id, body)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	werr := make(chan error, 1)
	go func() {
		_, err := p.stdin.Write(line)
		werr <- err
	}()
	limit := c.opts.Timeout
	if typ == TypeInit {
		// A process starting (a runtime, a JIT, a compile) is not a case
		// answered late: init has at least InitTimeout (spec/ADAPTER.md 2).
		limit = max(limit, InitTimeout)
	}
	timer := time.NewTimer(limit)
	defer timer.Stop()
	fail := func(base error, format string, args ...any) error {
		return &transportError{fmt.Errorf("%w: %s: %s", base, typ, fmt.Sprintf(format, args...))}
	}
	for {
		select {
		case err := <-werr:
			werr = nil
			if err != nil {
				return fail(ErrExited, "writing the request: %v%s", err, p.exitNote())
			}
		case l, ok := <-p.lines:
			if !ok {
				return fail(ErrExited, "no reply%s", p.exitNote())
			}
			l = bytes.TrimSpace(l)
			if len(l) == 0 {
				continue
			}
			var h header
			if err := json.Unmarshal(l, &h); err != nil {
				return fail(ErrProtocol, "malformed line (%v): %s", err, clip(l))
			}
			switch {
			case h.Type == "":
				return fail(ErrProtocol, "a line without type: %s", clip(l))
			case h.InReplyTo == nil:
				return fail(ErrProtocol, "a line without in_reply_to: %s", clip(l))
			case *h.InReplyTo < id:
				fmt.Fprintf(c.errW, "%slate reply ignored: %s\n", c.opts.StderrPrefix, clip(l))
				continue
			case *h.InReplyTo > id:
				return fail(ErrProtocol, "in_reply_to %d, want %d: %s", *h.InReplyTo, id, clip(l))
			case h.Type == TypeError:
				if h.Code == nil {
					return fail(ErrProtocol, "error without code: %s", clip(l))
				}
				return &RemoteError{Type: typ, Code: *h.Code, Text: h.Text}
			case h.Type != typ+"_ok":
				return fail(ErrProtocol, "reply type %q, want %q or %q", h.Type, typ+"_ok", TypeError)
			}
			if err := json.Unmarshal(l, reply); err != nil {
				return fail(ErrProtocol, "bad %s_ok: %v: %s", typ, err, clip(l))
			}
			return nil
		case <-timer.C:
			return fail(ErrTimeout, "no reply within %v", limit)
		case <-ctx.Done():
			return &transportError{ctx.Err()}
		}
	}
}

func clip(b []byte) string {
	const n = 200
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// proc is one adapter process.
type proc struct {
	cmd        *exec.Cmd
	stdin      io.WriteCloser
	lines      chan []byte // stdout lines; closed at EOF
	quit       chan struct{}
	readerDone chan struct{}
	stderrDone chan struct{}
	exited     chan struct{} // closed once Wait returned
	killOnce   sync.Once
	waitErr    error

	errMu    sync.Mutex
	firstErr string // the first non-blank line of its stderr
}

// firstStderr is the first non-blank line the process wrote on stderr
// (so far).
func (p *proc) firstStderr() string {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	return p.firstErr
}

func (c *Client) spawn() (*proc, error) {
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Dir = c.opts.Dir
	cmd.Env = c.opts.Env
	procs.OwnGroup(cmd) // killing it kills what it started (a shell wrapper's children)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// Our own pipes, not StdoutPipe: exec then never closes the read ends,
	// so Wait can run at once without losing the last lines.
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("adapter: starting %q: %w", c.argv[0], err)
	}
	p := &proc{
		cmd: cmd, stdin: stdin,
		lines:      make(chan []byte, 16),
		quit:       make(chan struct{}),
		readerDone: make(chan struct{}),
		stderrDone: make(chan struct{}),
		exited:     make(chan struct{}),
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	go func() {
		defer close(p.readerDone)
		defer close(p.lines)
		defer outR.Close()
		br := bufio.NewReaderSize(outR, 1<<16)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				select {
				case p.lines <- line:
				case <-p.quit:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		defer close(p.stderrDone)
		defer errR.Close()
		sc := bufio.NewScanner(errR)
		sc.Buffer(make([]byte, 0, 4096), 1<<20)
		for sc.Scan() {
			p.errMu.Lock()
			if p.firstErr == "" {
				p.firstErr = clip(bytes.TrimSpace(sc.Bytes()))
			}
			p.errMu.Unlock()
			fmt.Fprintf(c.errW, "%s%s\n", c.opts.StderrPrefix, sc.Bytes())
		}
		_, _ = io.Copy(io.Discard, errR)
	}()
	return p, nil
}

// exitNote gives a process that closed its stdout a moment to exit, kills
// it otherwise, and describes how it ended.
func (p *proc) exitNote() string {
	select {
	case <-p.exited:
	case <-time.After(500 * time.Millisecond):
	}
	p.kill()
	if p.waitErr != nil {
		return " (" + p.waitErr.Error() + ")"
	}
	return " (exit status 0)"
}

// kill kills the process group and reaps the process. Idempotent.
func (p *proc) kill() {
	p.killOnce.Do(func() {
		close(p.quit)
		_ = p.stdin.Close()
		if p.cmd.Process != nil {
			procs.KillGroup(p.cmd.Process.Pid) // the group too: children may hold our pipes
		}
		<-p.exited
		select {
		case <-p.readerDone:
		case <-time.After(2 * time.Second):
		}
		select {
		case <-p.stderrDone:
		case <-time.After(time.Second):
		}
	})
}
