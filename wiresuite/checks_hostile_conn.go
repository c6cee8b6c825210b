package wiresuite

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/subspace/kbkit/wire"

	"github.com/coder/websocket"
)

// The hostile group, connection side: timeouts, caps, frames, tokens.

// dialRaw opens a TCP (or TLS) connection to the server.
func (e *Env) dialRaw(ctx context.Context) (net.Conn, string, error) {
	u, err := url.Parse(e.BaseURL)
	if err != nil {
		return nil, "", err
	}
	host := u.Host
	if u.Port() == "" {
		if u.Scheme == "https" {
			host += ":443"
		} else {
			host += ":80"
		}
	}
	d := net.Dialer{Timeout: e.EventTimeout}
	if u.Scheme == "https" {
		c, err := (&tls.Dialer{NetDialer: &d}).DialContext(ctx, "tcp", host)
		return c, u.Host, err
	}
	c, err := d.DialContext(ctx, "tcp", host)
	return c, u.Host, err
}

// readAnswer reads one HTTP answer's status line and headers from c,
// within d: keep is false when the server said Connection: close; open is
// true when nothing came (the connection hangs); retryAfter says whether
// it had a Retry-After header.
func readAnswer(c net.Conn, d time.Duration) (status string, keep, open, retryAfter bool) {
	_ = c.SetReadDeadline(time.Now().Add(d))
	defer func() { _ = c.SetReadDeadline(time.Time{}) }()
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	var ne net.Error
	if err != nil && errors.As(err, &ne) && ne.Timeout() {
		return "", false, true, false
	}
	status, keep = strings.TrimSpace(line), err == nil
	length := 0
	for err == nil {
		var h string
		if h, err = br.ReadString('\n'); err != nil || strings.TrimSpace(h) == "" {
			break
		}
		k, v, _ := strings.Cut(h, ":")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case strings.EqualFold(k, "connection") && strings.EqualFold(v, "close"):
			keep = false
		case strings.EqualFold(k, "content-length"):
			length, _ = strconv.Atoi(v)
		case strings.EqualFold(k, "retry-after") && v != "":
			retryAfter = true
		}
	}
	if err == nil && length > 0 {
		_, err = io.ReadFull(br, make([]byte, length)) // the body, so that the connection holds nothing unread
	}
	return status, keep && err == nil, false, retryAfter
}

// stillOpen closes and drops the connections the server has closed (a
// read that does not time out at once found EOF or a reset).
func stillOpen(conns []net.Conn) []net.Conn {
	out := conns[:0]
	one := make([]byte, 1)
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Millisecond))
		_, err := c.Read(one)
		var ne net.Error
		if err != nil && errors.As(err, &ne) && ne.Timeout() {
			_ = c.SetReadDeadline(time.Time{})
			out = append(out, c)
			continue
		}
		c.Close()
	}
	return out
}

// waitAnswerOrClose reads c until the server answers or closes it, at most
// within d; it returns the status line (or "" when closed without an
// answer) and how long it took.
func waitAnswerOrClose(c net.Conn, d time.Duration) (status string, took time.Duration, open bool) {
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(d))
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	took = time.Since(start)
	var ne net.Error
	if err != nil && errors.As(err, &ne) && ne.Timeout() {
		return "", took, true
	}
	return strings.TrimSpace(line), took, false
}

func checkSlowBody(ctx context.Context, e *Env) error {
	l, _, err := e.needLimit(ctx, "body_timeout_ms", limitNeed{
		none: failf("kb.limits advertises no body timeout (body_timeout_ms 0): a client can hold a connection forever (PROTOCOL.md 8)"),
	})
	if err != nil {
		return err
	}
	bound := grace(l.BodyTimeoutMS)
	cases := []struct {
		what string
		send func(host string) string
	}{
		{"a body that stops after one byte, without a token", func(host string) string {
			return "POST /trpc/kb.command HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
		}},
		{"a body that stops after one byte, with the token", func(host string) string {
			return "POST /trpc/kb.command HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\nAuthorization: Bearer " +
				e.Token + "\r\nContent-Length: 1000\r\n\r\n{"
		}},
		{"headers that never end", func(host string) string {
			return "POST /trpc/kb.command HTTP/1.1\r\nHost: " + host + "\r\nX-Slow: "
		}},
	}
	var wg sync.WaitGroup
	errs := make([]error, len(cases))
	for i, cs := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, host, err := e.dialRaw(ctx)
			if err != nil {
				errs[i] = err
				return
			}
			defer c.Close()
			if _, err := io.WriteString(c, cs.send(host)); err != nil {
				errs[i] = err
				return
			}
			status, took, open := waitAnswerOrClose(c, bound)
			switch {
			case open:
				errs[i] = &Failure{Message: fmt.Sprintf("%s: the connection is still held after %s (body_timeout_ms %d): a client can tie the server up (PROTOCOL.md 8)",
					cs.what, bound.Round(time.Millisecond), l.BodyTimeoutMS),
					Expected: fmt.Sprintf("HTTP 408 or a close within %d ms", l.BodyTimeoutMS), Got: "nothing"}
			case status != "" && !strings.Contains(status, " 408") && !strings.Contains(status, " 401") && !strings.Contains(status, " 400"):
				errs[i] = &Failure{Message: fmt.Sprintf("%s: answered %q after %s", cs.what, status, took.Round(time.Millisecond)),
					Expected: "HTTP 408 TIMEOUT (or 401 at once without a token), or a close", Got: status}
			}
		}()
	}
	wg.Wait()
	return firstErr(errs...)
}

func checkSilentWebSocket(ctx context.Context, e *Env) error {
	l, _, err := e.needLimit(ctx, "params_timeout_ms", limitNeed{
		none: failf("kb.limits advertises no connectionParams timeout (params_timeout_ms 0): a socket without a token can be held forever (PROTOCOL.md 8)"),
	})
	if err != nil {
		return err
	}
	bound := grace(l.ParamsTimeoutMS)
	u := e.wsURL("connectionParams=1")
	dctx, cancel := context.WithTimeout(ctx, e.EventTimeout)
	conn, _, err := websocket.Dial(dctx, u, &websocket.DialOptions{HTTPClient: e.HTTP})
	cancel()
	if err != nil {
		return fmt.Errorf("WebSocket %s: %w", u, err)
	}
	defer conn.CloseNow()
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	for {
		_, b, err := conn.Read(rctx)
		if err == nil {
			continue // e.g. an error message before the close
		}
		took := time.Since(start)
		if rctx.Err() != nil {
			return &Failure{Message: fmt.Sprintf("a WebSocket that never sent connectionParams is still open after %s (params_timeout_ms %d) (PROTOCOL.md 5.3, 8)",
				bound.Round(time.Millisecond), l.ParamsTimeoutMS), Expected: "close 1008", Got: "still open", Request: "WebSocket " + u}
		}
		if st := websocket.CloseStatus(err); st != websocket.StatusPolicyViolation {
			return &Failure{Message: fmt.Sprintf("the silent WebSocket ended after %s, but not with 1008", took.Round(time.Millisecond)),
				Expected: "close 1008", Got: fmt.Sprintf("%v (close status %d) %s", err, st, excerpt(b, 100)), Request: "WebSocket " + u}
		}
		return nil
	}
}

func checkSubscriptionCap(ctx context.Context, e *Env) error {
	l, n, err := e.needLimit(ctx, "max_subscriptions_per_socket", limitNeed{
		none: failf("kb.limits advertises no cap on subscriptions per socket (PROTOCOL.md 8)"),
		most: 20000, over: failf("more than this suite opens (20000)"),
	}, "max_subscriptions_per_device")
	if err != nil {
		return err
	}
	p, err := e.setupPage(ctx, 0)
	if err != nil {
		return err
	}
	w, _, err := e.dialWS(ctx, wsHeader, "")
	if err != nil {
		return err
	}
	defer w.Close()
	in := map[string]any{"page_id": p.id}
	last := "1"
	pc := newPacer(l)
	if d := pc.duration(n + l.MaxSubscriptionsPerDevice + 2); d > 5*time.Minute {
		return Skipf("opening %d subscriptions at the advertised rate_limit_per_second %g takes %s (more than 5 minutes)",
			n+l.MaxSubscriptionsPerDevice+2, l.RateLimitPerSecond, d.Round(time.Second))
	}
	if err := openSubscriptions(ctx, w, l, pc, in, 0, n, fmt.Sprintf("max_subscriptions_per_socket (%d)", n)); err != nil {
		return err
	}
	over := n
	if err := pc.wait(ctx); err != nil {
		return err
	}
	if err := w.sendJSON(ctx, map[string]any{"id": over, "method": "subscription",
		"params": map[string]any{"path": "kb.onPage", "input": in, "lastEventId": last}}); err != nil {
		return err
	}
	m, err := w.reply(ctx, over, "the answer to one subscription more than max_subscriptions_per_socket")
	if err != nil {
		return err
	}
	if m.Error == nil {
		return w.fail("TOO_MANY_REQUESTS", excerpt(m.raw, 300), "subscription %d on a socket with max_subscriptions_per_socket %d is refused (PROTOCOL.md 8)", n+1, n)
	}
	if _, err := w.wsError(m, "TOO_MANY_REQUESTS", "kb.onPage", "the refused subscription"); err != nil {
		return err
	}
	// The socket goes on: stop one, and the place is free again.
	if err := w.sendJSON(ctx, map[string]any{"id": 0, "method": "subscription.stop"}); err != nil {
		return err
	}
	if m, err := w.reply(ctx, 0, "the answer to subscription.stop"); err != nil {
		return err
	} else if m.Result == nil || m.Result.Type != "stopped" {
		return w.fail("stopped", excerpt(m.raw, 300), "subscription.stop is answered stopped")
	}
	if err := pc.wait(ctx); err != nil {
		return err
	}
	if err := w.subscribe(ctx, over, "kb.onPage", in, &last); err != nil {
		return err
	}
	return e.deviceSubscriptionCap(ctx, l, pc, in, n)
}

// openSubscriptions opens k kb.onPage subscriptions on w (ids 0..k-1),
// numbered from first for the messages, keeping at most half of the
// socket's request queue (max_socket_queue) in flight and within the
// advertised rate limit (pc).
func openSubscriptions(ctx context.Context, w *WS, l *wire.Limits, pc *pacer, in map[string]any, first, k int, cap string) error {
	window := max(1, l.MaxSocketQueue/2)
	for sent, started := 0, 0; started < k; {
		for ; sent < k && sent-started < window; sent++ {
			if err := pc.wait(ctx); err != nil {
				return err
			}
			if err := w.sendJSON(ctx, map[string]any{"id": sent, "method": "subscription",
				"params": map[string]any{"path": "kb.onPage", "input": in, "lastEventId": "1"}}); err != nil {
				return err
			}
		}
		m, err := w.recv(ctx, fmt.Sprintf("the answer to subscription %d", first+started+1))
		if err != nil {
			return err
		}
		if m.Result == nil || m.Result.Type != "started" {
			return w.fail("started", excerpt(m.raw, 300), "subscription %d, within %s, is served", first+started+1, cap)
		}
		started++
	}
	return nil
}

// deviceSubscriptionCap fills more sockets of the device until it holds
// max_subscriptions_per_device subscriptions (open counts those already
// open), and checks that one more is refused. The cap is per instance: the
// suite must talk to one instance.
func (e *Env) deviceSubscriptionCap(ctx context.Context, l *wire.Limits, pc *pacer, in map[string]any, open int) error {
	d := l.MaxSubscriptionsPerDevice
	if d <= 0 {
		return failf("kb.limits advertises no cap on a device's subscriptions (PROTOCOL.md 8)")
	}
	if d > 20000 {
		return failf("max_subscriptions_per_device %d: more than this suite opens (20000)", d)
	}
	last := "1"
	var socks []*WS
	defer func() {
		for _, w := range socks {
			w.Close()
		}
	}()
	for open < d {
		w, _, err := e.dialWS(ctx, wsHeader, "")
		if err != nil {
			return err
		}
		socks = append(socks, w)
		k := min(l.MaxSubscriptionsPerSocket, d-open)
		if err := openSubscriptions(ctx, w, l, pc, in, open, k, fmt.Sprintf("max_subscriptions_per_device (%d)", d)); err != nil {
			return err
		}
		open += k
	}
	w, _, err := e.dialWS(ctx, wsHeader, "")
	if err != nil {
		return err
	}
	socks = append(socks, w)
	if err := pc.wait(ctx); err != nil {
		return err
	}
	if err := w.sendJSON(ctx, map[string]any{"id": "over", "method": "subscription",
		"params": map[string]any{"path": "kb.onPage", "input": in, "lastEventId": last}}); err != nil {
		return err
	}
	m, err := w.reply(ctx, "over", "the answer to one subscription more than max_subscriptions_per_device")
	if err != nil {
		return err
	}
	if m.Error == nil {
		return w.fail("TOO_MANY_REQUESTS", excerpt(m.raw, 300),
			"subscription %d of a device with max_subscriptions_per_device %d (on one instance) is refused (PROTOCOL.md 8)", d+1, d)
	}
	_, err = w.wsError(m, "TOO_MANY_REQUESTS", "kb.onPage", "the refused subscription")
	return err
}

func checkBatchCap(ctx context.Context, e *Env) error {
	l, n, err := e.needLimit(ctx, "max_batch", limitNeed{
		none: failf("kb.limits advertises no cap on calls per batch (PROTOCOL.md 8)"),
	})
	if err != nil {
		return err
	}
	p, err := e.setupPage(ctx, 0)
	if err != nil {
		return err
	}
	batch := func(k int) (*Response, []string, error) {
		paths := make([]string, k)
		for i := range paths {
			paths[i] = "kb.command"
		}
		input := map[string]any{}
		ids := make([]string, k)
		for i := range ids {
			ids[i] = newID()
			input[fmt.Sprint(i)] = e.envelope(p.id, ids[i], "create-after", map[string]any{"text": "batched"})
		}
		r, err := e.send(ctx, request{method: http.MethodPost, path: "/trpc/" + strings.Join(paths, ","), rawQuery: "batch=1", body: rawJSON(input)})
		return r, ids, err
	}
	r, ids, err := batch(n + 1)
	if err != nil {
		return err
	}
	if _, err := expectError(r, "PAYLOAD_TOO_LARGE", ""); err != nil {
		return step(fmt.Sprintf("an HTTP batch of max_batch+1 (%d) commands", n+1), err)
	}
	if err := e.unchanged(ctx, p, ids[:min(len(ids), l.MaxPending)]...); err != nil {
		return step("the refused batch", err)
	}
	r, _, err = batch(n)
	if err != nil {
		return err
	}
	if r.Status != http.StatusOK {
		return step(fmt.Sprintf("an HTTP batch of max_batch (%d) commands", n), r.fail("HTTP 200", fmt.Sprintf("HTTP %d", r.Status), "a batch within the cap is served"))
	}
	p.seq += int64(n)

	// The same cap on a WebSocket message array.
	w, _, err := e.dialWS(ctx, wsHeader, "")
	if err != nil {
		return err
	}
	defer w.Close()
	msgs := make([]any, n+1)
	for i := range msgs {
		msgs[i] = map[string]any{"id": i, "method": "query", "params": map[string]any{"path": "kb.whoami", "input": map[string]any{}}}
	}
	if err := w.sendJSON(ctx, msgs); err != nil {
		return err
	}
	m, err := w.recv(ctx, "the answer to a message array of max_batch+1 calls")
	if err != nil {
		return err
	}
	if m.Error == nil {
		return w.fail("{\"id\":null,\"error\":PAYLOAD_TOO_LARGE}", excerpt(m.raw, 300), "a WebSocket message array of max_batch+1 (%d) calls is refused as a whole (PROTOCOL.md 5, 8)", n+1)
	}
	if _, err := w.wsError(m, "PAYLOAD_TOO_LARGE", "", "the refused message array"); err != nil {
		return err
	}
	return w.quiet(ctx, "none of the refused array's calls is answered")
}

func checkConnectionCap(ctx context.Context, e *Env) error {
	const most = 20000
	_, n, err := e.needLimit(ctx, "max_connections", limitNeed{
		none: failf("kb.limits advertises no connection cap (PROTOCOL.md 8)"),
		most: most, over: Skipf("more connections than this suite opens (%d)", most),
	})
	if err != nil {
		return err
	}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	// The server's own other clients hold some; open until one is refused
	// or more than n are open at once. Only connections that are really
	// open count: a server may answer with Connection: close (HTTP/1.1
	// allows it) or drop an idle connection, and those are not held.
	refused := -1
	var status string
	hold := false // the last probe was served with Connection: close: hold the next connection unprobed
	for i := 0; refused < 0 && i <= 2*n+10; i++ {
		c, host, err := e.dialRaw(ctx)
		if err != nil {
			if isFDLimit(err) {
				return Skipf("this client can open only %d connections (raise ulimit -n above %d)", len(conns), n+10)
			}
			return fmt.Errorf("connection %d: %w", i+1, err)
		}
		conns = append(conns, c)
		if len(conns) < n*9/10 || hold {
			hold = false
			continue // surely within the cap, or held for a closed probe: do not wait on each
		}
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: "+host+"\r\n\r\n"); err != nil {
			refused, status = i, "closed"
			break
		}
		st, keep, open, retryAfter := readAnswer(c, e.EventTimeout)
		switch {
		case open:
			return &Failure{Message: fmt.Sprintf("connection %d of max_connections %d hangs without an answer (PROTOCOL.md 8: answered 503 or closed at once)", i+1, n),
				Expected: "HTTP 200, or 503 / a close past the cap", Got: "nothing within " + e.EventTimeout.String()}
		case strings.Contains(st, " 200") && keep:
			// served: within the cap; keep it open (keep-alive)
		case strings.Contains(st, " 200"):
			c.Close() // served with Connection: close: not held open
			conns = conns[:len(conns)-1]
			hold = true
		case strings.Contains(st, " 503") && !retryAfter:
			return &Failure{Message: fmt.Sprintf("connection %d, past max_connections %d, is answered 503 without Retry-After (PROTOCOL.md 3.2, 8: SERVICE_UNAVAILABLE carries Retry-After)", i+1, n),
				Expected: "HTTP 503 with Retry-After", Got: st + " without Retry-After"}
		case st == "" || strings.Contains(st, " 503"):
			refused, status = i, st
		default:
			return &Failure{Message: fmt.Sprintf("connection %d answered %q", i+1, st), Expected: "HTTP 200, or 503 past the cap", Got: st}
		}
		if refused < 0 && len(conns) > n {
			conns = stillOpen(conns)
			if len(conns) > n {
				return &Failure{Message: fmt.Sprintf("%d connections were open at once (each checked still open) and all were served: max_connections %d is not enforced (PROTOCOL.md 8)", len(conns), n),
					Expected: fmt.Sprintf("a 503 or a close by the %d-th open connection", n+1), Got: "all served"}
			}
		}
	}
	if refused < 0 {
		return Skipf("the server closed the connections as fast as they were opened: %d attempts never held %d open", 2*n+11, n+1)
	}
	_ = status
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	// Served again once they are closed: several connections held open
	// at once, each served, so that the cap's places are back (the server
	// may take a moment to see the closes) and the next check finds the
	// server as the others do.
	k := max(1, min(n/2, 8))
	deadline := time.Now().Add(e.EventTimeout)
	for {
		served, st := servedAtOnce(ctx, e, k)
		if served == k {
			return nil
		}
		if time.Now().After(deadline) {
			return failf("after the connections past the cap were closed, %d of %d new connections held at once were served within %s (the last answer: %q)", served, k, e.EventTimeout, st)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// servedAtOnce opens k connections, holds them, and sends GET /healthz on
// each: how many were answered 200 (and the last other answer), before
// it closes them all.
func servedAtOnce(ctx context.Context, e *Env, k int) (served int, other string) {
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range k {
		c, host, err := e.dialRaw(ctx)
		if err != nil {
			return served, err.Error()
		}
		conns = append(conns, c)
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: "+host+"\r\n\r\n"); err != nil {
			return served, err.Error()
		}
		st, _, _, _ := readAnswer(c, e.EventTimeout)
		if !strings.Contains(st, " 200") {
			return served, st
		}
		served++
	}
	return served, ""
}

func isFDLimit(err error) bool {
	return strings.Contains(err.Error(), "too many open files")
}

// wsCloseOn sends one frame and expects the server to close with want.
func wsCloseOn(ctx context.Context, e *Env, typ websocket.MessageType, data []byte, want websocket.StatusCode) error {
	w, _, err := e.dialWS(ctx, wsHeader, "")
	if err != nil {
		return err
	}
	defer w.Close()
	w.log("> ", data)
	if err := w.conn.Write(ctx, typ, data); err != nil {
		return err
	}
	st, err := w.closed(ctx)
	if err != nil {
		return err
	}
	if st != want {
		return w.fail(fmt.Sprintf("close %d", want), fmt.Sprintf("close status %d", st), "the WebSocket is closed with %d (PROTOCOL.md 5)", want)
	}
	return nil
}

func checkWSBinary(ctx context.Context, e *Env) error {
	return wsCloseOn(ctx, e, websocket.MessageBinary,
		[]byte(`{"id":1,"method":"query","params":{"path":"kb.whoami","input":{}}}`), websocket.StatusUnsupportedData)
}

func checkWSInvalidUTF8(ctx context.Context, e *Env) error {
	return wsCloseOn(ctx, e, websocket.MessageText,
		[]byte("{\"id\":1,\"method\":\"query\",\"params\":{\"path\":\"kb.whoami\",\"input\":{\"x\":\"\xff\"}}}"), websocket.StatusInvalidFramePayloadData)
}

func checkWSStopUnknown(ctx context.Context, e *Env) error {
	w, _, err := e.dialWS(ctx, wsHeader, "")
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.sendJSON(ctx, map[string]any{"id": "never-opened", "method": "subscription.stop"}); err != nil {
		return err
	}
	m, err := w.reply(ctx, "never-opened", "the answer to subscription.stop of an id never opened")
	if err != nil {
		return err
	}
	if m.Result == nil || m.Result.Type != "stopped" {
		return w.fail(`{"id":"never-opened","result":{"type":"stopped"}}`, excerpt(m.raw, 300), "every subscription.stop is answered stopped (PROTOCOL.md 5.1)")
	}
	return nil
}

func checkUnknownTokens(ctx context.Context, e *Env) error {
	_, n, err := e.needLimit(ctx, "auth_failures_per_minute", limitNeed{
		none: failf("kb.limits advertises no limit on unknown tokens per address (PROTOCOL.md 8)"),
		most: 10000, over: failf("more than this suite tries (10000)"),
	})
	if err != nil {
		return err
	}
	// A burst of n unknown tokens may all be answered 401.
	for i := 0; i < unknownTokenBurst(n); i++ {
		r, err := e.sendUnknownToken(ctx)
		if err != nil {
			return err
		}
		switch r.Status {
		case http.StatusUnauthorized:
			continue
		case http.StatusTooManyRequests:
			if r.Header.Get("Retry-After") == "" {
				return r.fail("Retry-After", "no Retry-After header", "a 429 says when to come back (PROTOCOL.md 6)")
			}
			_, err := expectError(r, "TOO_MANY_REQUESTS", "")
			if err != nil {
				return err
			}
			if i < n/2 {
				return r.fail(fmt.Sprintf("401 for the first %d unknown tokens", n), fmt.Sprintf("429 after %d", i),
					"auth_failures_per_minute %d: refused far too early", n)
			}
			return nil
		default:
			return r.fail("HTTP 401, then 429", fmt.Sprintf("HTTP %d", r.Status), "an unknown token is 401, and past the limit 429")
		}
	}
	return failf("%d unknown tokens from one address in a burst were all answered 401: auth_failures_per_minute %d is not enforced (PROTOCOL.md 8)", unknownTokenBurst(n), n)
}

func checkRevoke(ctx context.Context, e *Env) error {
	if e.RevokeToken == "" {
		return Skipf("needs --revoke-token (a device the suite may revoke)")
	}
	const within = 1500 * time.Millisecond // 1 s, and scheduling on both sides
	tok := e.RevokeToken
	r, err := e.send(ctx, request{method: http.MethodGet, path: "/trpc/kb.whoami", token: tok})
	if err != nil {
		return err
	}
	if r.Status == http.StatusUnauthorized {
		return Skipf("the --revoke-token is refused already (revoked by an earlier run? pair a fresh device)")
	}
	if _, err := expectSuccess(r); err != nil {
		return step("kb.whoami of the device to revoke", err)
	}
	w, _, err := e.dialWS(ctx, wsHeader, tok)
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.subscribe(ctx, 1, "kb.onInvalidate", map[string]any{}, nil); err != nil {
		return step("a subscription of the device to revoke", err)
	}
	r, err = e.send(ctx, request{method: http.MethodPost, path: "/trpc/kb.revoke", body: []byte(`{}`), token: tok})
	if err != nil {
		return err
	}
	if _, err := expectSuccess(r); err != nil {
		return step("kb.revoke", err)
	}
	start := time.Now()
	for {
		r, err := e.send(ctx, request{method: http.MethodGet, path: "/trpc/kb.whoami", token: tok, no429Retry: true})
		if err != nil {
			return err
		}
		if r.Status == http.StatusUnauthorized {
			break
		}
		if time.Since(start) > within {
			return r.fail("HTTP 401 within 1 s of kb.revoke", fmt.Sprintf("HTTP %d after %s", r.Status, time.Since(start).Round(time.Millisecond)),
				"a revoked device's token still works (PROTOCOL.md 2)")
		}
		time.Sleep(50 * time.Millisecond)
	}
	wait, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for {
		_, err := w.nextWithin(wait, within)
		if err == nil {
			continue
		}
		if errors.Is(err, errTimeout) || wait.Err() != nil {
			return w.fail("close 1008 within 1 s", "still open", "the revoked device's WebSocket stays open (PROTOCOL.md 2)")
		}
		if st := websocket.CloseStatus(w.err); st != websocket.StatusPolicyViolation {
			return w.fail("close 1008", fmt.Sprintf("close status %d", st), "a revoked device's WebSocket is closed with 1008")
		}
		break
	}
	w2, resp, err := e.dialWS(ctx, wsHeader, tok)
	if err == nil {
		w2.Close()
		return failf("a WebSocket upgrade with the revoked token was accepted (PROTOCOL.md 2)")
	}
	if resp == nil || resp.Status != http.StatusUnauthorized {
		return step("a WebSocket upgrade with the revoked token", firstErr(err))
	}
	return nil
}
