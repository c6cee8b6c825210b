package wiresuite

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/subspace/kbkit/internal/wsframe"
)

// The connection side of checks_certify.go: PING ahead of queued calls,
// idle keep-alive connections.

func certifyConnChecks() []Check {
	return []Check{
		{"protocol/ws-ping-jumps-queue", "a PING sent behind queued calls is answered PONG before those calls' replies (5.1: PING jumps the queue)", checkPingJumpsQueue},
		{"protocol/hostile-socket-queue", "four times max_socket_queue calls pipelined on one socket are each answered once; past the queue some are refused TOO_MANY_REQUESTS, retryable (8)", checkSocketQueue},
		{"protocol/hostile-write-timeout", "a WebSocket that stops reading is disconnected within write_timeout_ms of a blocked write, its events piling up (5.3, 8)", checkWriteTimeout},
		{"protocol/hostile-idle-keepalive", "a keep-alive HTTP connection without a request is closed within idle_timeout_ms (8; nothing to check when it is 0)", checkIdleKeepAlive},
	}
}

func checkPingJumpsQueue(ctx context.Context, e *Env) error {
	l, err := e.needLimits(ctx)
	if err != nil {
		return err
	}
	return onSocket(ctx, e, func(p *page, w *WS) error {
		// Slow calls: kb.page with max_pending pending ids each, within the
		// socket's queue so that none is refused.
		pending := make([]string, max(1, min(l.MaxPending, 1000)))
		for i := range pending {
			pending[i] = newID()
		}
		k := max(2, min(l.MaxSocketQueue/2, 30))
		start := time.Now()
		for i := 0; i < k; i++ {
			if err := w.sendJSON(ctx, map[string]any{"id": i, "method": "query",
				"params": map[string]any{"path": "kb.page", "input": map[string]any{"page_id": p.id, "pending": pending}}}); err != nil {
				return err
			}
		}
		if err := w.sendRaw(ctx, []byte("PING")); err != nil {
			return err
		}
		replies, pong := 0, false
		var last time.Time
		for replies < k || !pong {
			b, err := w.next(ctx)
			if err != nil {
				return w.fail(fmt.Sprintf("PONG and %d replies", k), fmt.Sprintf("%d replies, PONG %v: %v", replies, pong, err), "the server did not answer")
			}
			if string(b) == "PONG" {
				if replies == k && last.Sub(start) >= 20*time.Millisecond {
					return w.fail("PONG before the last of the queued calls' replies", fmt.Sprintf("PONG after all %d replies (the last %s after the first call)", k, last.Sub(start).Round(time.Millisecond)),
						"PING is answered at once, not behind the calls queued before it (PROTOCOL.md 5.1: PING jumps the queue)")
				}
				pong = true
				continue
			}
			replies++
			last = time.Now()
		}
		return nil
	})
}

func checkIdleKeepAlive(ctx context.Context, e *Env) error {
	l, err := e.needLimits(ctx, "idle_timeout_ms")
	if err != nil {
		return err
	}
	idle := time.Duration(l.IdleTimeoutMS) * time.Millisecond
	switch {
	case idle == 0:
		return nil // no idle limit: allowed (PROTOCOL.md 4.6), nothing to check
	case idle > 40*time.Second:
		return Skipf("idle_timeout_ms %d: longer than this check waits (40 s); run the server with a shorter idle timeout to check it", l.IdleTimeoutMS)
	}
	c, host, err := e.dialRaw(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: "+host+"\r\n\r\n"); err != nil {
		return err
	}
	st, keep, open, _ := readAnswer(c, e.EventTimeout)
	switch {
	case open:
		return failf("GET /healthz was not answered within %s", e.EventTimeout)
	case !keep:
		return nil // Connection: close: the server holds no idle connection
	case st == "":
		return failf("GET /healthz: the connection closed without an answer")
	}
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(grace(l.IdleTimeoutMS)))
	_, err = c.Read(make([]byte, 1))
	var ne net.Error
	if err != nil && errors.As(err, &ne) && ne.Timeout() {
		return &Failure{Message: fmt.Sprintf("an idle keep-alive connection is still open %s after its last answer (idle_timeout_ms %d): idle connections are never closed (PROTOCOL.md 8)",
			time.Since(start).Round(100*time.Millisecond), l.IdleTimeoutMS),
			Expected: fmt.Sprintf("closed within %d ms", l.IdleTimeoutMS), Got: "still open"}
	}
	return nil
}

// checkSocketQueue pipelines four times max_socket_queue slow calls on one
// socket without waiting: each is answered once, and past the queue some
// are refused TOO_MANY_REQUESTS, retryable. A server that answered them
// all within 10 ms had no queue to bound: nothing to check then.
func checkSocketQueue(ctx context.Context, e *Env) error {
	l, q, err := e.needLimit(ctx, "max_socket_queue", limitNeed{
		none: failf("kb.limits advertises no max_socket_queue (PROTOCOL.md 8)"),
		most: 2500, over: Skipf("more calls than this suite pipelines (10000)"),
	})
	if err != nil {
		return err
	}
	return onSocket(ctx, e, func(p *page, w *WS) error {
		pending := make([]string, max(1, min(l.MaxPending, 100)))
		for i := range pending {
			pending[i] = newID()
		}
		pc := newPacer(l)
		n := 4 * q
		start := time.Now()
		for i := 0; i < n; i++ {
			if err := pc.wait(ctx); err != nil {
				return err
			}
			if err := w.sendJSON(ctx, map[string]any{"id": i, "method": "query",
				"params": map[string]any{"path": "kb.page", "input": map[string]any{"page_id": p.id, "pending": pending}}}); err != nil {
				return err
			}
		}
		seen := map[string]bool{}
		refused := 0
		for len(seen) < n {
			m, err := w.recv(ctx, fmt.Sprintf("the answers to %d pipelined calls (%d so far)", n, len(seen)))
			if err != nil {
				return err
			}
			id := string(m.ID)
			if seen[id] {
				return w.fail("one answer per call", excerpt(m.raw, 300), "call %s was answered twice", id)
			}
			seen[id] = true
			if m.Error == nil {
				continue
			}
			es, err := w.wsError(m, "TOO_MANY_REQUESTS", "kb.page", "a pipelined call past max_socket_queue")
			if err != nil {
				return err
			}
			if !es.Data.Retryable {
				return w.fail(`"retryable": true`, excerpt(m.raw, 300), "a call refused past max_socket_queue is retryable (PROTOCOL.md 8)")
			}
			refused++
		}
		if took := time.Since(start); refused == 0 && took >= 10*time.Millisecond && pc.rate == 0 {
			return w.fail(fmt.Sprintf("some of %d pipelined calls refused TOO_MANY_REQUESTS", n),
				fmt.Sprintf("all %d served, in %s", n, took.Round(time.Millisecond)),
				"%d calls pipelined on one socket with max_socket_queue %d were all served: the queue is not bounded (PROTOCOL.md 8)", n, q)
		}
		return nil
	})
}

// rawWS opens a WebSocket by hand on a TCP connection with a small receive
// buffer, subscribes to page and returns once "started" arrived: the
// caller then stops reading, as a client that does not read its socket.
func (e *Env) rawWS(ctx context.Context, page string) (net.Conn, error) {
	c, host, err := e.dialRaw(ctx)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096)
	}
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	u, _ := url.Parse(e.wsURL(""))
	req := "GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + base64.StdEncoding.EncodeToString(key) + "\r\n" +
		"Authorization: Bearer " + e.Token + "\r\n\r\n"
	msg := rawJSON(map[string]any{"id": 1, "method": "subscription", "params": map[string]any{"path": "kb.onPage", "input": map[string]any{"page_id": page}}})
	if _, err := io.WriteString(c, req); err != nil {
		c.Close()
		return nil, err
	}
	if _, err := c.Write(maskedText(msg)); err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetReadDeadline(time.Now().Add(e.EventTimeout))
	var got []byte
	buf := make([]byte, 4096)
	for !bytes.Contains(got, []byte(`"started"`)) {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("a hand-made WebSocket to %s: no \"started\" (%v): %s", u, err, excerpt(got, 300))
		}
	}
	_ = c.SetReadDeadline(time.Time{})
	return c, nil
}

// maskedText is one masked client text frame holding b.
func maskedText(b []byte) []byte {
	return wsframe.AppendMasked(nil, true, wsframe.OpText, [4]byte{0x6b, 0x62, 0x6b, 0x74}, b)
}

// checkWriteTimeout subscribes on a socket it never reads again, commits
// megabytes of events to the page, and expects the server to disconnect
// it within write_timeout_ms once its writes block (PROTOCOL.md 5.3, 8).
func checkWriteTimeout(ctx context.Context, e *Env) error {
	l, err := e.needLimits(ctx, "write_timeout_ms")
	if err != nil {
		return err
	}
	wt := time.Duration(l.WriteTimeoutMS) * time.Millisecond
	switch {
	case wt == 0:
		return failf("kb.limits advertises no write timeout: a client that does not read holds the server's writes for ever (PROTOCOL.md 5.3: disconnected after 10 s)")
	case wt > 30*time.Second:
		return Skipf("write_timeout_ms %d: longer than this check waits (30 s)", l.WriteTimeoutMS)
	}
	p, err := e.setupPage(ctx, 0)
	if err != nil {
		return err
	}
	c, err := e.rawWS(ctx, p.id)
	if err != nil {
		return err
	}
	defer c.Close()
	// 6 MB of events: more than the kernel buffers on both sides hold
	// (Linux: at most 4 MB sent unacknowledged).
	chunk := strings.Repeat("0123456789abcdef", int(min(e.MaxBody-1024, 100<<10)/16))
	total := 0
	for i := 0; total < 6<<20; i++ {
		if _, err := e.commit(ctx, p, "create-after", map[string]any{"node": fmt.Sprintf("w%d", i), "text": chunk}); err != nil {
			return step("setup: a large command", err)
		}
		total += len(chunk)
	}
	blocked := time.Now()
	time.Sleep(grace(l.WriteTimeoutMS))
	// A closed socket answers what arrives with a reset: send a PING and
	// drain what the kernels hold. A disconnected socket ends (reset or
	// EOF); one the server still holds blocks.
	if _, err := c.Write(maskedText([]byte("PING"))); err != nil {
		return nil // already reset: disconnected
	}
	buf := make([]byte, 1<<20)
	drained := 0
	for {
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		n, err := c.Read(buf)
		drained += n
		var ne net.Error
		switch {
		case err == nil:
			continue
		case errors.As(err, &ne) && ne.Timeout():
			return &Failure{Message: fmt.Sprintf("a WebSocket that stopped reading is still connected %s after %d MB of events were committed to its page (%d KB were on their way; write_timeout_ms %d; PROTOCOL.md 5.3, 8)",
				time.Since(blocked).Round(100*time.Millisecond), total>>20, drained>>10, l.WriteTimeoutMS),
				Expected: fmt.Sprintf("disconnected within %d ms of a blocked write", l.WriteTimeoutMS), Got: "still connected"}
		default:
			return nil // EOF or reset: disconnected
		}
	}
}
