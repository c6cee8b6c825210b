package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// h1 posts kb.command over plain HTTP/1.1 keep-alive connections of its
// own: one write and one read on the caller's goroutine. net/http's
// client hands every request to two goroutines of the connection (its
// read and write loops) and back, which cost a load generator more CPU
// than the rest of a command; commands are small POSTs answered with
// small bodies, which is all this speaks (Content-Length or chunked
// answers). Servers behind https, or with a path in the base URL, get
// net/http.

// h1Pool is the idle connections to one host.
type h1Pool struct {
	host string // host:port, also the Host header
	mu   sync.Mutex
	idle []*h1Conn
}

type h1Conn struct {
	nc       net.Conn
	br       *bufio.Reader
	bw       *bufio.Writer
	deadline time.Time // the connection's deadline
}

const h1MaxIdle = 256

var (
	h1PoolsMu sync.Mutex
	h1Pools   = map[string]*h1Pool{}
)

// h1For returns the pool for base, or nil when base is not plain http to
// a host without a path.
func h1For(base string) *h1Pool {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" || (u.Path != "" && u.Path != "/") || u.User != nil || u.Host == "" {
		return nil
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "80")
	}
	h1PoolsMu.Lock()
	defer h1PoolsMu.Unlock()
	p := h1Pools[host]
	if p == nil {
		p = &h1Pool{host: host}
		h1Pools[host] = p
	}
	return p
}

func (p *h1Pool) get() *h1Conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		return c
	}
	return nil
}

func (p *h1Pool) put(c *h1Conn) {
	p.mu.Lock()
	if len(p.idle) < h1MaxIdle {
		p.idle = append(p.idle, c)
		c = nil
	}
	p.mu.Unlock()
	if c != nil {
		c.nc.Close()
	}
}

// errH1 is an answer this client does not read: the connection is
// dropped and the command, not known to be decided, may be retried.
var errH1 = errors.New("client: unreadable HTTP answer")

// post sends one POST and returns the status and body. An error means
// the request may or may not have reached the server.
func (p *h1Pool) post(ctx context.Context, path, auth string, body []byte) (int, []byte, error) {
	if c := p.get(); c != nil {
		status, resp, sent, err := c.roundTrip(ctx, p.host, path, auth, body)
		if err == nil {
			p.reuse(c, resp)
			return status, resp.body, nil
		}
		c.nc.Close()
		// An idle connection the server closed meanwhile fails before any
		// answer: try once more on a fresh one (a resent command is
		// answered, not redone: the server deduplicates ids).
		if sent || ctx.Err() != nil {
			return 0, nil, err
		}
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", p.host)
	if err != nil {
		return 0, nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	c := &h1Conn{nc: nc, br: bufio.NewReaderSize(nc, 4096), bw: bufio.NewWriterSize(nc, 4096)}
	status, resp, _, err := c.roundTrip(ctx, p.host, path, auth, body)
	if err != nil {
		nc.Close()
		return 0, nil, err
	}
	p.reuse(c, resp)
	return status, resp.body, nil
}

func (p *h1Pool) reuse(c *h1Conn, r h1Response) {
	if r.close {
		c.nc.Close()
		return
	}
	p.put(c)
}

type h1Response struct {
	body  []byte
	close bool
}

// roundTrip writes the request and reads the answer; sent reports that
// some of the answer arrived (the server had the request).
func (c *h1Conn) roundTrip(ctx context.Context, host, path, auth string, body []byte) (status int, r h1Response, sent bool, err error) {
	// A request gets at least 25 and at most 30 seconds (Client's
	// http.Client timeout), and no longer than ctx, which cuts the
	// connection's deadline when it ends. The deadline is moved once in
	// five seconds, not per request: moving a runtime timer per command
	// cost wakeups of the network poller.
	now := time.Now()
	if c.deadline.Sub(now) < 25*time.Second {
		c.deadline = now.Add(30 * time.Second)
		_ = c.nc.SetDeadline(c.deadline)
	}
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(time.Unix(1, 0)) })
		defer func() {
			if !stop() { // the deadline was cut: the connection is not reusable
				r.close = true
				if err != nil {
					err = errors.Join(ctx.Err(), err)
				}
			}
		}()
	}
	w := c.bw
	w.WriteString("POST ")
	w.WriteString(path)
	w.WriteString(" HTTP/1.1\r\nHost: ")
	w.WriteString(host)
	w.WriteString("\r\nUser-Agent: kbkit\r\nContent-Type: application/json\r\nContent-Length: ")
	w.WriteString(strconv.Itoa(len(body)))
	if auth != "" {
		w.WriteString("\r\nAuthorization: ")
		w.WriteString(auth)
	}
	w.WriteString("\r\n\r\n")
	w.Write(body)
	if err := w.Flush(); err != nil {
		return 0, r, false, err
	}
	// Status line.
	line, err := c.line()
	if err != nil {
		return 0, r, false, err
	}
	sent = true
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0, r, sent, fmt.Errorf("%w: status line %q", errH1, line)
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, r, sent, fmt.Errorf("%w: status line %q", errH1, line)
	}
	r.close = line[7] == '0' // HTTP/1.0 closes unless told otherwise; treat it as closing
	length, chunked := -1, false
	for {
		h, err := c.line()
		if err != nil {
			return 0, r, sent, err
		}
		if len(h) == 0 {
			break
		}
		colon := bytes.IndexByte(h, ':')
		if colon <= 0 {
			return 0, r, sent, fmt.Errorf("%w: header %q", errH1, h)
		}
		name, value := h[:colon], bytes.TrimSpace(h[colon+1:])
		switch {
		case asciiEqualFold(name, "Content-Length"):
			n, err := strconv.Atoi(string(value))
			if err != nil || n < 0 || (length >= 0 && n != length) {
				return 0, r, sent, fmt.Errorf("%w: Content-Length %q", errH1, value)
			}
			length = n
		case asciiEqualFold(name, "Transfer-Encoding"):
			if !asciiEqualFold(value, "chunked") {
				return 0, r, sent, fmt.Errorf("%w: Transfer-Encoding %q", errH1, value)
			}
			chunked = true
		case asciiEqualFold(name, "Connection"):
			r.close = asciiEqualFold(value, "close")
		}
	}
	const maxBody = 64 << 20
	switch {
	case status == 204 || status == 304 || (status >= 100 && status < 200):
		if status < 200 {
			return 0, r, sent, fmt.Errorf("%w: status %d", errH1, status)
		}
	case chunked:
		r.body, err = c.chunked(maxBody)
		if err != nil {
			return 0, r, sent, err
		}
	case length >= 0:
		if length > maxBody {
			return 0, r, sent, fmt.Errorf("%w: %d-byte body", errH1, length)
		}
		r.body = make([]byte, length)
		if _, err := io.ReadFull(c.br, r.body); err != nil {
			return 0, r, sent, err
		}
	default: // the body runs to the end of the connection
		r.body, err = io.ReadAll(io.LimitReader(c.br, maxBody))
		if err != nil {
			return 0, r, sent, err
		}
		r.close = true
	}
	return status, r, sent, nil
}

// line reads a header line without its CRLF.
func (c *h1Conn) line() ([]byte, error) {
	l, err := c.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, fmt.Errorf("%w: a header line past %d bytes", errH1, c.br.Size())
	}
	if err != nil {
		return nil, err
	}
	l = l[:len(l)-1]
	if n := len(l); n > 0 && l[n-1] == '\r' {
		l = l[:n-1]
	}
	return l, nil
}

func (c *h1Conn) chunked(limit int) ([]byte, error) {
	var body []byte
	for {
		l, err := c.line()
		if err != nil {
			return nil, err
		}
		if i := bytes.IndexByte(l, ';'); i >= 0 {
			l = l[:i]
		}
		n, err := strconv.ParseUint(string(bytes.TrimSpace(l)), 16, 31)
		if err != nil {
			return nil, fmt.Errorf("%w: chunk size %q", errH1, l)
		}
		if n == 0 {
			for { // trailers
				t, err := c.line()
				if err != nil {
					return nil, err
				}
				if len(t) == 0 {
					return body, nil
				}
			}
		}
		if len(body)+int(n) > limit {
			return nil, fmt.Errorf("%w: body past %d bytes", errH1, limit)
		}
		start := len(body)
		body = append(body, make([]byte, n)...)
		if _, err := io.ReadFull(c.br, body[start:]); err != nil {
			return nil, err
		}
		if crlf, err := c.line(); err != nil || len(crlf) != 0 {
			return nil, fmt.Errorf("%w: chunk not ended by CRLF", errH1)
		}
	}
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
