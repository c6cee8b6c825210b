package wiresuite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/subspace/kbkit/wire"
)

// The hostile group: what a client that means harm (or is merely broken)
// can do to a server, and what the server must answer (PROTOCOL.md 4.1,
// 7, 8). The caps and timeouts are read from kb.limits, so the checks stay
// black-box; a limit the server does not advertise fails
// protocol/hostile-limits, once, and the check that exercises it is
// skipped (needLimits).

func hostileChecks() []Check {
	return []Check{
		{"protocol/hostile-limits", "kb.limits advertises every limit of section 8; the body and connectionParams timeouts are at most 30 s and every cap is set (8)", checkLimits},
		{"protocol/hostile-id-other-workspace", "an id decided in another workspace is decided anew here (committed, not a duplicate, nothing of the other use revealed); the first use keeps its outcome (4.1)", checkIDOtherWorkspace},
		{"protocol/hostile-id-reused", "an id decided for another page of the workspace is rejected id-reused (409), naming nothing of the first use, and writes nothing; the first use keeps its outcome (4.1)", checkIDReused},
		{"protocol/hostile-poison-text", "invalid UTF-8, \\u0000 and lone surrogate escapes in any string of a command are 400, never 5xx, and write nothing (7)", checkPoisonText},
		{"protocol/hostile-long-text", "a title and an alias of max_title_chars incompressible characters, a 2,700-character [[link]] and #tag commit; one character more in a title is 400 and writes nothing (8)", checkLongText},
		{"protocol/hostile-slow-body", "a request whose headers or body never arrive is answered 408 TIMEOUT or closed within body_timeout_ms, with or without a token (8)", checkSlowBody},
		{"protocol/hostile-silent-websocket", "a ?connectionParams=1 WebSocket that never sends its first message is closed with 1008 within params_timeout_ms (5.3, 8)", checkSilentWebSocket},
		{"protocol/hostile-subscription-cap", "past max_subscriptions_per_socket a subscription is refused TOO_MANY_REQUESTS, the socket goes on, and a stopped one frees a place; past max_subscriptions_per_device (over several sockets of one instance) too (8)", checkSubscriptionCap},
		{"protocol/hostile-batch-cap", "an HTTP batch or WebSocket message array of more than max_batch calls is refused as a whole with PAYLOAD_TOO_LARGE and runs none; max_batch calls are served (3.2, 5, 8)", checkBatchCap},
		{"protocol/hostile-connection-cap", "past max_connections (counting connections still open) a new connection is answered 503 with Retry-After or closed at once, and the server serves again when connections close (3.2, 8)", checkConnectionCap},
		{"protocol/hostile-ws-binary", "a binary frame closes the WebSocket with 1003 (5)", checkWSBinary},
		{"protocol/hostile-ws-invalid-utf8", "a text frame that is not UTF-8 closes the WebSocket with 1007 (5)", checkWSInvalidUTF8},
		{"protocol/hostile-ws-stop-unknown", "subscription.stop of an id never opened is answered stopped (5.1)", checkWSStopUnknown},
		{"protocol/hostile-revoke", "kb.revoke: within 1 s the token gets 401 over HTTP and on a new upgrade, and its open WebSocket is closed with 1008 (2)", checkRevoke},
		// Last: it spends this address's unknown-token allowance.
		{"protocol/hostile-unknown-tokens", "past auth_failures_per_minute unknown tokens from one address are refused 429 TOO_MANY_REQUESTS with Retry-After (8)", checkUnknownTokens},
		{"protocol/hostile-lockout", "right after a burst of unknown tokens from one address, valid tokens from it still authenticate, one never presented before too (--fresh-token) (8)", checkLockout},
	}
}

// limitFields are the fields kb.limits must have: wire.Limits' JSON names
// (held to PROTOCOL.md 8 by the wire package's test).
var limitFields = func() []string {
	t := reflect.TypeFor[wire.Limits]()
	out := make([]string, t.NumField())
	for i := range out {
		out[i] = t.Field(i).Tag.Get("json")
	}
	return out
}()

// maxTimeoutMS is the longest body or connectionParams timeout a server
// may advertise (PROTOCOL.md 8).
const maxTimeoutMS = 30000

// grace is what a check allows on top of an advertised timeout for
// scheduling on both sides.
func grace(ms int64) time.Duration {
	return time.Duration(ms)*time.Millisecond + time.Duration(ms)*time.Millisecond/4 + 2*time.Second
}

// limitsRead is kb.limits as the suite read it: every field the server
// advertised as a number, and in place of a field it lacks (absent, or not
// a number) the value assumedLimits gives, with what was wrong in lacks.
type limitsRead struct {
	wire.Limits
	lacks map[string]string // field -> "absent" or "not a number: ..."
}

// assumedLimits are what a check assumes for a field kb.limits lacks when
// it needs the field only to pace itself or to size a request
// (PROTOCOL.md 8): the least a server may advertise, so that the check
// asks no more than any server allows. A check about the field itself is
// skipped instead (needLimits), and protocol/hostile-limits fails for it.
var assumedLimits = map[string]string{
	"rate_limit_per_second": "0", // the rate limit is off unless advertised
	"rate_burst":            "1",
	"max_pending":           "1",
	"max_socket_queue":      "2",
}

// lacking names the fields kb.limits lacks, in limitFields order, with
// what is wrong with each.
func (l *limitsRead) lacking() string {
	var out []string
	for _, k := range limitFields {
		if why, ok := l.lacks[k]; ok {
			out = append(out, k+" ("+why+")")
		}
	}
	return strings.Join(out, ", ")
}

// errLimits is kb.limits' own failure: no answer, or not an object.
type errLimits struct{ err error }

func (e errLimits) Error() string { return e.err.Error() }
func (e errLimits) Unwrap() error { return e.err }

func (e *Env) limits(ctx context.Context) (*limitsRead, *Response, error) {
	r, err := e.query(ctx, "kb.limits", nil)
	if err != nil {
		return nil, nil, err
	}
	data, err := expectSuccess(r)
	if err != nil {
		return nil, r, errLimits{step("kb.limits", err)}
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil || raw == nil {
		return nil, r, errLimits{r.fail("an object of limits", excerpt(data, 200), "kb.limits answers an object (PROTOCOL.md 8)")}
	}
	l := &limitsRead{lacks: map[string]string{}}
	for _, k := range limitFields {
		v, ok := raw[k]
		if !ok {
			l.lacks[k] = "absent"
		} else if err := json.Unmarshal([]byte(`{"`+k+`":`+string(v)+`}`), &l.Limits); err != nil || string(v) == "null" {
			l.lacks[k] = "not a number: " + excerpt(v, 40)
		} else {
			continue
		}
		if a, ok := assumedLimits[k]; ok {
			_ = json.Unmarshal([]byte(`{"`+k+`":`+a+`}`), &l.Limits)
		}
	}
	return l, r, nil
}

func checkLimits(ctx context.Context, e *Env) error {
	l, r, err := e.limits(ctx)
	if err != nil {
		return err
	}
	if len(l.lacks) > 0 {
		return r.fail("every field of PROTOCOL.md 8 a number", excerpt(r.Body, 400), "kb.limits lacks %s (PROTOCOL.md 8)", l.lacking())
	}
	for _, t := range []struct {
		name string
		v    int64
	}{{"body_timeout_ms", l.BodyTimeoutMS}, {"params_timeout_ms", l.ParamsTimeoutMS}} {
		if t.v <= 0 || t.v > maxTimeoutMS {
			return r.fail(fmt.Sprintf("%s in 1..%d", t.name, maxTimeoutMS), fmt.Sprint(t.v),
				"a client may hold a request or a WebSocket without a token at most 30 s (PROTOCOL.md 8; 0 means none)")
		}
	}
	for _, c := range []struct {
		name string
		v    int64
	}{{"max_body", l.MaxBody}, {"max_connections", int64(l.MaxConnections)},
		{"max_subscriptions_per_socket", int64(l.MaxSubscriptionsPerSocket)},
		{"max_subscriptions_per_device", int64(l.MaxSubscriptionsPerDevice)}, {"max_batch", int64(l.MaxBatch)},
		{"max_socket_queue", int64(l.MaxSocketQueue)},
		{"auth_failures_per_minute", int64(l.AuthFailuresPerMinute)}, {"max_inflight", int64(l.MaxInflight)},
		{"max_title_chars", int64(l.MaxTitleChars)}, {"max_aliases", int64(l.MaxAliases)}, {"max_pending", int64(l.MaxPending)}} {
		if c.v <= 0 {
			return r.fail(c.name+" > 0", fmt.Sprint(c.v), "every cap of PROTOCOL.md 8 is set (0 means no cap)")
		}
	}
	if l.MaxBody != e.MaxBody {
		return r.fail(fmt.Sprintf("max_body %d (--max-body)", e.MaxBody), fmt.Sprint(l.MaxBody),
			"kb.limits' max_body differs from the limit the suite was told (pass --max-body %d)", l.MaxBody)
	}
	return nil
}

// needLimits reads kb.limits for a check that exercises the limits named
// by about. protocol/hostile-limits alone fails for what kb.limits lacks:
// when kb.limits does not answer an object, or lacks a field of about,
// the check is skipped naming it; a field it lacks that the check only
// paces itself or sizes a request by is assumed (assumedLimits).
func (e *Env) needLimits(ctx context.Context, about ...string) (*wire.Limits, error) {
	l, _, err := e.limits(ctx)
	var bad errLimits
	if errors.As(err, &bad) {
		return nil, Skipf("needs kb.limits, which did not answer an object of limits (protocol/hostile-limits fails for it): %s", strings.SplitN(bad.Error(), "\n", 2)[0])
	}
	if err != nil {
		return nil, step("kb.limits", err)
	}
	for _, k := range about {
		if why, ok := l.lacks[k]; ok {
			return nil, Skipf("needs kb.limits' %s, which is %s (protocol/hostile-limits fails for it)", k, why)
		}
	}
	return &l.Limits, nil
}

// ---- command ids ----

func checkIDOtherWorkspace(ctx context.Context, e *Env) error {
	if e.OtherToken == "" {
		return Skipf("needs --other-token (a device of another workspace)")
	}
	// Workspace A decides two ids: one committed, one rejected.
	a, err := e.setupPage(ctx, 1)
	if err != nil {
		return err
	}
	committed := a.cmds[2].ID
	rejected := newID()
	secret := "secret-" + newID()[:8]
	r, err := e.mutate(ctx, "kb.command", e.envelope(a.id, rejected, "edit-text", map[string]any{"node": secret, "text": "x"}))
	if err != nil {
		return err
	}
	if _, err := expectError(r, "CONFLICT", "kb.command"); err != nil {
		return step("setup: a rejected edit-text of a missing node", err)
	}

	// Workspace B uses both ids for its own commands: each must be decided
	// as a new command of B's page.
	other := &Env{BaseURL: e.BaseURL, Token: e.OtherToken, DeviceID: e.OtherDeviceID, HTTP: e.HTTP,
		EventTimeout: e.EventTimeout, Quiet: e.Quiet, MaxBody: e.MaxBody}
	b, err := other.newPage(ctx)
	if err != nil {
		return step("setup (other workspace)", err)
	}
	for i, id := range []string{committed, rejected} {
		what := []string{"committed", "rejected"}[i]
		pl := map[string]any{"node": fmt.Sprintf("b%d", i), "text": "workspace B's own command"}
		r, err := other.mutate(ctx, "kb.command", other.envelope(b.id, id, "create-after", pl))
		if err != nil {
			return err
		}
		if strings.Contains(string(r.Body), secret) || strings.Contains(string(r.Body), a.id) {
			return r.fail("nothing of workspace A", excerpt(r.Body, 300),
				"the answer to another workspace's command reveals the first use of its id (PROTOCOL.md 4.1: ids are scoped to the workspace)")
		}
		seq, dup, err := seqOf(r)
		if err != nil {
			return step(fmt.Sprintf("workspace B's command with an id %s in workspace A", what), err)
		}
		if dup || seq != b.seq+1 {
			return r.fail(fmt.Sprintf(`{"seq":%d}`, b.seq+1), excerpt(r.Body, 200),
				"a command whose id was %s in another workspace is decided as a new one (PROTOCOL.md 4.1), not answered with the other use's outcome", what)
		}
		b.record(seq, id, "create-after", pl)
	}
	s, err := other.snapshot(ctx, b.id, nil)
	if err != nil {
		return step("kb.page of workspace B", err)
	}
	if s.seq != b.seq {
		return s.r.fail(fmt.Sprintf("seq %d", b.seq), fmt.Sprintf("seq %d", s.seq), "workspace B's acknowledged commands are on its page")
	}
	// A's retries keep their outcomes.
	r, err = e.mutate(ctx, "kb.command", e.envelope(a.id, committed, "create-after", a.nodePayload(1)))
	if err != nil {
		return err
	}
	if seq, dup, err := seqOf(r); err != nil || !dup || seq != 2 {
		return step("workspace A's retry of its committed id", firstErr(err, r.fail(`{"seq":2,"duplicate":true}`, excerpt(r.Body, 200),
			"the first use keeps its id: a retry answers its original outcome")))
	}
	r, err = e.mutate(ctx, "kb.command", e.envelope(a.id, rejected, "edit-text", map[string]any{"node": secret, "text": "x"}))
	if err != nil {
		return err
	}
	if _, err := expectError(r, "CONFLICT", "kb.command"); err != nil {
		return step("workspace A's retry of its rejected id", err)
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func checkIDReused(ctx context.Context, e *Env) error {
	p, err := e.setupPage(ctx, 0)
	if err != nil {
		return err
	}
	secret := "secret text " + newID()[:8]
	id, err := e.commit(ctx, p, "create-after", map[string]any{"node": "n1", "text": secret})
	if err != nil {
		return step("setup", err)
	}
	q, err := e.setupPage(ctx, 0)
	if err != nil {
		return err
	}
	r, err := e.mutate(ctx, "kb.command", e.envelope(q.id, id, "create-after", map[string]any{"node": "m1", "text": "another page"}))
	if err != nil {
		return err
	}
	es, err := expectError(r, "CONFLICT", "kb.command")
	if err != nil {
		return step("an id committed on another page of the workspace", err)
	}
	if es.Data.Rejection == nil || es.Data.Rejection.Code != "id-reused" {
		return r.fail("rejection id-reused", excerpt(r.Body, 300), "an id decided for another page is rejected id-reused (PROTOCOL.md 4.1)")
	}
	for _, leak := range []string{p.id, secret, "n1"} {
		if strings.Contains(string(r.Body), leak) {
			return r.fail("a message naming nothing of the first use", excerpt(r.Body, 300),
				"the id-reused answer reveals %q of the first use (PROTOCOL.md 4.1)", leak)
		}
	}
	if err := e.unchanged(ctx, q); err != nil {
		return err
	}
	r, err = e.mutate(ctx, "kb.command", e.envelope(p.id, id, "create-after", map[string]any{"node": "n1", "text": secret}))
	if err != nil {
		return err
	}
	if seq, dup, err := seqOf(r); err != nil || !dup || seq != 2 {
		return step("the first use's retry", firstErr(err, r.fail(`{"seq":2,"duplicate":true}`, excerpt(r.Body, 200),
			"the first use keeps the id: its retry answers its original outcome (PROTOCOL.md 4.1)")))
	}
	return nil
}

// ---- text that can never be stored ----

// poison are JSON string contents no server can store or round-trip:
// raw bytes that are not UTF-8, the NUL escape, lone surrogate escapes.
var poison = []struct{ name, raw string }{
	{"the byte 0xff", "a\xffb"},
	{"a truncated UTF-8 sequence", "a\xc3(b"},
	{"an overlong encoding of '/'", "a\xc0\xafb"},
	{"an encoded surrogate (CESU)", "a\xed\xa0\x80b"},
	{`the escape \u0000`, `a\u0000b`},
	{`a lone high surrogate \ud800`, `a\ud800b`},
	{`a lone low surrogate \udc00`, `a\udc00b`},
	{`a high surrogate before a non-surrogate \ud800\u0041`, `\ud800\u0041`},
	{`a high surrogate at the end \udbff`, `x\udbff`},
}

func checkPoisonText(ctx context.Context, e *Env) error {
	p, err := e.setupPage(ctx, 1)
	if err != nil {
		return err
	}
	type shape struct {
		what  string
		typ   string
		page  string // "" = p
		field func(s string) string
	}
	shapes := []shape{
		{"create-page title", "create-page", "new", func(s string) string { return `{"title":"` + s + `"}` }},
		{"create-after text", "create-after", "", func(s string) string { return `{"node":"z1","after":"n1","text":"` + s + `"}` }},
		{"edit-text text", "edit-text", "", func(s string) string { return `{"node":"n1","text":"` + s + `"}` }},
		{"rename-page title", "rename-page", "", func(s string) string { return `{"title":"t ` + s + `"}` }},
		{"set-aliases alias", "set-aliases", "", func(s string) string { return `{"aliases":["al ` + s + `"]}` }},
		{"create-after node id", "create-after", "", func(s string) string { return `{"node":"` + s + `","text":"x"}` }},
	}
	for _, sh := range shapes {
		for _, pz := range poison {
			page := p.id
			if sh.page == "new" {
				page = newID()
			}
			id := newID()
			body := fmt.Sprintf(`{"id":%q,"device_id":%q,"page_id":%q,"type":%q,"payload":%s}`,
				id, e.DeviceID, page, sh.typ, sh.field(pz.raw))
			r, err := e.send(ctx, request{method: http.MethodPost, path: "/trpc/kb.command", body: []byte(body)})
			if err != nil {
				return err
			}
			what := fmt.Sprintf("%s holding %s", sh.what, pz.name)
			if r.Status != http.StatusBadRequest {
				return step(what, r.fail("HTTP 400 (BAD_REQUEST or PARSE_ERROR)", fmt.Sprintf("HTTP %d", r.Status),
					"text that can never be stored is refused at the trust boundary with 400, never 5xx (a client retries a 5xx forever) (PROTOCOL.md 7)"))
			}
			if _, err := errorObject(r, r.Body, "BAD_REQUEST", ""); err != nil {
				if _, err2 := errorObject(r, r.Body, "PARSE_ERROR", ""); err2 != nil {
					return step(what, err)
				}
			}
			if sh.page == "new" {
				if err := e.absent(ctx, page); err != nil {
					return step(what, err)
				}
			} else if err := e.unchanged(ctx, p, id); err != nil {
				return step(what, err)
			}
		}
	}
	return nil
}

// incompressible returns n characters drawn at random from letters,
// digits and CJK ideographs (as in a real title, but no compressor or
// prefix index can make it small).
func incompressible(rng *rand.Rand, n int, asciiOnly bool) string {
	const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	var b strings.Builder
	for i := 0; i < n; i++ {
		switch {
		case i == 0 || asciiOnly || rng.IntN(2) == 0:
			b.WriteByte(alnum[rng.IntN(52+10*min(i, 1))])
		default:
			b.WriteRune(rune(0x4e00 + rng.IntN(0x9fff-0x4e00)))
		}
	}
	return b.String()
}

func checkLongText(ctx context.Context, e *Env) error {
	l, err := e.needLimits(ctx, "max_title_chars")
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	n := l.MaxTitleChars
	id := newID()
	title := incompressible(rng, n, false)
	r, err := e.mutate(ctx, "kb.command", e.envelope(id, newID(), "create-page", map[string]any{"title": title}))
	if err != nil {
		return err
	}
	if seq, _, err := seqOf(r); err != nil || seq != 1 {
		return step(fmt.Sprintf("create-page with a title of max_title_chars (%d) characters", n), firstErr(err,
			r.fail(`{"seq":1}`, excerpt(r.Body, 200), "a title within the limit commits")))
	}
	p, err := e.setupPage(ctx, 0)
	if err != nil {
		return err
	}
	if _, err := e.commit(ctx, p, "set-aliases", map[string]any{"aliases": []string{incompressible(rng, n, false)}}); err != nil {
		return step(fmt.Sprintf("an alias of max_title_chars (%d) characters", n), err)
	}
	link := "see [[" + incompressible(rng, 2700, false) + "]]"
	if _, err := e.commit(ctx, p, "create-after", map[string]any{"node": "n1", "text": link}); err != nil {
		return step("a node whose text holds a [[link]] of 2,700 characters", err)
	}
	tag := "tagged #" + incompressible(rng, 2700, true)
	if _, err := e.commit(ctx, p, "create-after", map[string]any{"node": "n2", "after": "n1", "text": tag}); err != nil {
		return step("a node whose text holds a #tag of 2,700 characters", err)
	}
	if _, err := e.commit(ctx, p, "edit-text", map[string]any{"node": "n1", "text": link + " and [[" + incompressible(rng, 2700, false) + "]]"}); err != nil {
		return step("an edit-text adding a second long link", err)
	}
	over := newID()
	r, err = e.mutate(ctx, "kb.command", e.envelope(over, newID(), "create-page", map[string]any{"title": incompressible(rng, n+1, false)}))
	if err != nil {
		return err
	}
	if _, err := expectError(r, "BAD_REQUEST", "kb.command"); err != nil {
		return step(fmt.Sprintf("create-page with a title of max_title_chars+1 (%d) characters", n+1), err)
	}
	if err := e.absent(ctx, over); err != nil {
		return err
	}
	cid := newID()
	r, err = e.mutate(ctx, "kb.command", e.envelope(p.id, cid, "set-aliases", map[string]any{"aliases": []string{incompressible(rng, n+1, false)}}))
	if err != nil {
		return err
	}
	if _, err := expectError(r, "BAD_REQUEST", "kb.command"); err != nil {
		return step(fmt.Sprintf("an alias of max_title_chars+1 (%d) characters", n+1), err)
	}
	return e.unchanged(ctx, p, cid)
}
