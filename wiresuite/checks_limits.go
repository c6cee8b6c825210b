package wiresuite

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// The limits of PROTOCOL.md 8 that a server may advertise off or too
// large to reach cheaply (the per-device rate limit, admission control)
// and the aliases of a page. They run last: the rate limit check spends
// the device's bucket (and waits for it to refill).

func limitChecks() []Check {
	return []Check{
		{"protocol/hostile-max-aliases", "set-aliases with max_aliases+1 distinct aliases is 400 BAD_REQUEST and writes nothing (the page keeps its aliases, no seq is taken); max_aliases aliases commit (8)", checkMaxAliases},
		{"protocol/hostile-max-inflight", "more than max_inflight + max_queue concurrent calls are each served or refused 503 SERVICE_UNAVAILABLE with Retry-After, retryable, some refused; after Retry-After a call is served (8; skipped when the two pass 64)", checkMaxInflight},
		{"protocol/hostile-rate-limit", "one device calling back to back is refused 429 TOO_MANY_REQUESTS with Retry-After, retryable, before its calls pass rate_burst plus what rate_limit_per_second refilled; after Retry-After its next call is served (8; skipped when rate_limit_per_second is 0)", checkRateLimit},
	}
}

// retryAfter reads a Retry-After header of whole seconds (PROTOCOL.md 3.2).
func retryAfter(r *Response) (time.Duration, error) {
	v := r.Header.Get("Retry-After")
	s, err := strconv.Atoi(v)
	if err != nil || s < 0 {
		return 0, r.fail("a Retry-After header of whole seconds", fmt.Sprintf("Retry-After: %q", v),
			"TOO_MANY_REQUESTS and SERVICE_UNAVAILABLE carry a Retry-After header in seconds (PROTOCOL.md 3.2, 8)")
	}
	return time.Duration(s) * time.Second, nil
}

// refusal checks a call refused by a limit: the status and error of code,
// data.retryable and Retry-After; it returns the Retry-After.
func refusal(r *Response, code, path, what string) (time.Duration, error) {
	es, err := expectError(r, code, path)
	if err != nil {
		return 0, step(what, err)
	}
	if !es.Data.Retryable {
		return 0, step(what, r.fail(`"retryable": true`, excerpt(r.Body, 300), "a call refused by a limit was not decided: it is retryable (PROTOCOL.md 6, 8)"))
	}
	d, err := retryAfter(r)
	return d, step(what, err)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ---- aliases ----

// maxAliasesSent bounds the aliases this suite sends in one command.
const maxAliasesSent = 10000

func checkMaxAliases(ctx context.Context, e *Env) error {
	// The check sends max_aliases+1 aliases.
	_, n, err := e.needLimit(ctx, "max_aliases", limitNeed{
		none: failf("kb.limits advertises no max_aliases (PROTOCOL.md 8)"),
		most: maxAliasesSent - 1, over: Skipf("more aliases than this suite sends (%d)", maxAliasesSent),
	})
	if err != nil {
		return err
	}
	tag := newID()[:8]
	aliases := make([]string, n+1)
	for i := range aliases {
		aliases[i] = fmt.Sprintf("alias %s %d", tag, i)
	}
	if size := len(rawJSON(aliases)) + 300; int64(size) > e.MaxBody {
		return Skipf("a command of max_aliases+1 aliases (%d bytes) does not fit in max_body %d", size, e.MaxBody)
	}
	p, err := e.setupPage(ctx, 0)
	if err != nil {
		return err
	}
	if _, err := e.commit(ctx, p, "set-aliases", map[string]any{"aliases": aliases[:n]}); err != nil {
		return step(fmt.Sprintf("set-aliases of max_aliases (%d) aliases", n), err)
	}
	what := fmt.Sprintf("set-aliases with max_aliases+1 (%d) aliases", n+1)
	id := newID()
	r, err := e.mutate(ctx, "kb.command", e.envelope(p.id, id, "set-aliases", map[string]any{"aliases": aliases}))
	if err != nil {
		return err
	}
	if _, err := expectError(r, "BAD_REQUEST", "kb.command"); err != nil {
		return step(what+" (PROTOCOL.md 8: 400)", err)
	}
	if err := e.unchanged(ctx, p, id); err != nil {
		return step(what, err)
	}
	s, err := e.snapshot(ctx, p.id, nil)
	if err != nil {
		return step("kb.page after the refused set-aliases", err)
	}
	var doc struct {
		Page struct {
			Aliases []string `json:"aliases"`
		} `json:"page"`
	}
	if err := json.Unmarshal(s.doc, &doc); err != nil || !slices.Equal(doc.Page.Aliases, aliases[:n]) {
		return s.r.fail(fmt.Sprintf("the %d aliases of the committed set-aliases", n), excerpt(s.doc, 300),
			"the refused set-aliases changed the page's aliases (PROTOCOL.md 7: nothing is written)")
	}
	return nil
}

// ---- admission control ----

// maxOverload bounds max_inflight + max_queue for protocol/hostile-max-inflight:
// past it, exceeding admission control takes more concurrent calls than
// the suite opens connections for.
const maxOverload = 64

// overloadRounds is how many bursts protocol/hostile-max-inflight sends
// before it concludes that nothing bounds the calls running at once.
const overloadRounds = 5

func checkMaxInflight(ctx context.Context, e *Env) error {
	l, _, err := e.needLimit(ctx, "max_inflight", limitNeed{
		none: failf("kb.limits advertises no max_inflight (PROTOCOL.md 8)"),
	}, "max_queue", "queue_timeout_ms")
	if err != nil {
		return err
	}
	over := l.MaxInflight + max(l.MaxQueue, 0)
	if over > maxOverload {
		return Skipf("max_inflight %d + max_queue %d = %d: exceeding them takes more concurrent calls than this suite sends (%d); "+
			"check a server started with small ones (the reference server: --max-inflight 1 --max-queue 1)", l.MaxInflight, l.MaxQueue, over, maxOverload)
	}
	n := min(2*over+6, l.MaxConnections/2)
	if l.RateLimitPerSecond > 0 {
		n = min(n, max(l.RateBurst, 1))
	}
	if n <= over {
		return Skipf("max_connections %d and rate_burst %d leave room for %d concurrent calls, not more than max_inflight + max_queue %d",
			l.MaxConnections, l.RateBurst, n, over)
	}
	p, err := e.setupPage(ctx, 0)
	if err != nil {
		return err
	}
	// Slow calls: kb.page with many pending ids, within max_body (an id
	// takes 45 bytes URL-encoded).
	k := max(1, min(l.MaxPending, 500, int((e.MaxBody-300)/45)))
	pending := make([]string, k)
	for i := range pending {
		pending[i] = newID()
	}
	target := "/trpc/kb.page?input=" + encodeURIComponent(string(rawJSON(map[string]any{"page_id": p.id, "pending": pending})))
	pc := newPacer(l)
	for round := 1; round <= overloadRounds; round++ {
		for i := 0; i < n; i++ {
			if err := pc.wait(ctx); err != nil {
				return err
			}
		}
		answers, err := e.burst(ctx, target, n, time.Duration(l.QueueTimeoutMS)*time.Millisecond)
		if err != nil {
			return err
		}
		var wait time.Duration
		refused := 0
		for i, r := range answers {
			what := fmt.Sprintf("round %d, call %d of %d at once (max_inflight %d, max_queue %d)", round, i+1, n, l.MaxInflight, l.MaxQueue)
			if r.Status == http.StatusOK {
				if _, err := expectSuccess(r); err != nil {
					return step(what, err)
				}
				continue
			}
			if r.Status != http.StatusServiceUnavailable {
				return step(what, r.fail("HTTP 200, or 503 SERVICE_UNAVAILABLE past the limits", fmt.Sprintf("HTTP %d", r.Status),
					"a call past admission control is refused 503, retryable (PROTOCOL.md 8)"))
			}
			d, err := refusal(r, "SERVICE_UNAVAILABLE", "kb.page", what)
			if err != nil {
				return err
			}
			wait, refused = max(wait, d), refused+1
		}
		if refused == 0 {
			continue
		}
		if err := sleep(ctx, wait); err != nil {
			return err
		}
		if _, err := e.snapshot(ctx, p.id, nil); err != nil {
			return step(fmt.Sprintf("kb.page %s after %d calls were refused 503 (Retry-After: the refusal is transient)", wait, refused), err)
		}
		return nil
	}
	return failf("%d rounds of %d concurrent kb.page calls (more than max_inflight %d + max_queue %d) were all served: none was refused 503 SERVICE_UNAVAILABLE (PROTOCOL.md 8: admission control)",
		overloadRounds, n, l.MaxInflight, l.MaxQueue)
}

// burst sends n GETs of target on n connections at once: each request
// but its last bytes is written first, then the rest of all of them. It
// returns the answers in connection order.
func (e *Env) burst(ctx context.Context, target string, n int, queueTimeout time.Duration) ([]*Response, error) {
	type conn struct {
		c  net.Conn
		rw *bufio.ReadWriter
	}
	var conns []conn
	defer func() {
		for _, c := range conns {
			_ = c.c.Close()
		}
	}()
	var host string
	for i := 0; i < n; i++ {
		c, h, err := e.dialRaw(ctx)
		if err != nil {
			return nil, step(fmt.Sprintf("connection %d of %d", i+1, n), err)
		}
		host = h
		conns = append(conns, conn{c, bufio.NewReadWriter(bufio.NewReader(c), bufio.NewWriter(c))})
		_ = c.SetDeadline(time.Now().Add(2*e.EventTimeout + queueTimeout)) // a hang detector
	}
	req := []byte("GET " + target + " HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " + e.Token + "\r\nConnection: close\r\n\r\n")
	head, tail := req[:len(req)-2], req[len(req)-2:]
	for i, c := range conns {
		if _, err := c.rw.Write(head); err != nil {
			return nil, fmt.Errorf("writing request %d: %w", i+1, err)
		}
		if err := c.rw.Flush(); err != nil {
			return nil, fmt.Errorf("writing request %d: %w", i+1, err)
		}
	}
	for i, c := range conns {
		if _, err := c.rw.Write(tail); err != nil {
			return nil, fmt.Errorf("writing request %d: %w", i+1, err)
		}
		if err := c.rw.Flush(); err != nil {
			return nil, fmt.Errorf("writing request %d: %w", i+1, err)
		}
	}
	out := make([]*Response, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.ReadResponse(c.rw.Reader, nil)
			if err != nil {
				errs[i] = fmt.Errorf("the answer to call %d of %d at once: %w", i+1, n, err)
				return
			}
			var b bytes.Buffer
			_, err = b.ReadFrom(resp.Body)
			resp.Body.Close()
			if err != nil {
				errs[i] = fmt.Errorf("the answer to call %d of %d at once: %w", i+1, n, err)
				return
			}
			out[i] = &Response{Method: http.MethodGet, URL: e.BaseURL + target, Status: resp.StatusCode, Header: resp.Header, Body: b.Bytes()}
		}()
	}
	wg.Wait()
	return out, firstErr(errs...)
}

// ---- the per-device rate limit ----

// rateBudget bounds how long protocol/hostile-rate-limit calls in a
// tight loop before it concludes that it cannot call faster than the
// rate it is to exceed.
const rateBudget = 15 * time.Second

// maxRefill bounds the wait for the device's bucket to refill once the
// rate limit check is done.
const maxRefill = 30 * time.Second

func checkRateLimit(ctx context.Context, e *Env) error {
	l, err := e.needLimits(ctx, "rate_limit_per_second")
	if err != nil {
		return err
	}
	rate := l.RateLimitPerSecond
	if rate <= 0 {
		return Skipf("rate limiting is off (kb.limits' rate_limit_per_second is %g): no rate to exceed", rate)
	}
	// The burst matters only when the limit is on.
	if l, err = e.needLimits(ctx, "rate_burst"); err != nil {
		return err
	}
	burst := max(l.RateBurst, 1)
	// One call at a time: after the refusal no call of this device is
	// under way, so Retry-After is the whole wait for its next token.
	start := time.Now()
	served := 0
	var refused *Response
	for refused == nil {
		r, err := e.send(ctx, request{method: http.MethodGet, path: "/trpc/kb.limits", no429Retry: true})
		if err != nil {
			return err
		}
		if r.Status == http.StatusTooManyRequests {
			refused = r
			continue
		}
		if _, err := expectSuccess(r); err != nil {
			return step(fmt.Sprintf("call %d of one device in a row", served+1), err)
		}
		served++
		elapsed := time.Since(start)
		// The bucket held at most rate_burst tokens when the first call
		// came and gained rate_limit_per_second a second since.
		if allowed := float64(burst) + rate*elapsed.Seconds() + 1; float64(served) > allowed {
			return r.fail(fmt.Sprintf("429 TOO_MANY_REQUESTS within %.0f calls", allowed), fmt.Sprintf("%d calls in %s served", served, elapsed.Round(time.Millisecond)),
				"one device called past rate_burst %d and rate_limit_per_second %g and was not refused (PROTOCOL.md 8)", burst, rate)
		}
		if elapsed > rateBudget {
			return Skipf("this client made %d calls in %s (%.0f a second), not faster than rate_limit_per_second %g refills: the limit cannot be exceeded from here",
				served, elapsed.Round(time.Millisecond), float64(served)/elapsed.Seconds(), rate)
		}
	}
	what := fmt.Sprintf("call %d of one device in a row (rate_burst %d, rate_limit_per_second %g)", served+1, burst, rate)
	wait, err := refusal(refused, "TOO_MANY_REQUESTS", "kb.limits", what)
	if err != nil {
		return err
	}
	if err := sleep(ctx, wait); err != nil {
		return err
	}
	r, err := e.send(ctx, request{method: http.MethodGet, path: "/trpc/kb.limits", no429Retry: true})
	if err != nil {
		return err
	}
	if _, err := expectSuccess(r); err != nil {
		return step(fmt.Sprintf("the device's next call, %s after the 429 (its Retry-After)", wait), err)
	}
	// Leave the device its whole burst for what runs next; the rule is
	// checked whether or not the check's time runs out meanwhile.
	_ = sleep(ctx, min(time.Duration(float64(burst)/rate*float64(time.Second)), maxRefill))
	return nil
}
