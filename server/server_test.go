package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subspace/kbkit/spec"
	"github.com/subspace/kbkit/wire"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/gowebpki/jcs"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/server/dispatch"
	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/server/store"
)

func TestMain(m *testing.M) { os.Exit(pgprovider.RunTests(m)) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// ---- fixtures ----

// instance is one server instance: its own store pool, hub and listener.
type instance struct {
	st  *store.Store
	hub *dispatch.Hub
	srv *Server
	ts  *httptest.Server
}

func newInstance(t testing.TB, dsn string, opts Options, hubOpts ...dispatch.Option) *instance {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	hub := dispatch.New(st, append([]dispatch.Option{dispatch.Logger(quiet), dispatch.PollInterval(200 * time.Millisecond)}, hubOpts...)...)
	hctx, cancel := context.WithCancel(ctx)
	hubDone := make(chan struct{})
	go func() { defer close(hubDone); _ = hub.Run(hctx) }()
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	srv := New(st, hub, opts)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
		_ = srv.Shutdown(sctx)
		scancel()
		ts.Close()
		cancel()
		<-hubDone
		st.Close()
	})
	return &instance{st: st, hub: hub, srv: srv, ts: ts}
}

// client is a paired device talking to an instance.
type client struct {
	t    testing.TB
	base string
	dev  store.PairedDevice
}

func pair(t testing.TB, in *instance, workspace string) client {
	t.Helper()
	dev, err := in.st.PairDevice(context.Background(), workspace)
	if err != nil {
		t.Fatal(err)
	}
	return client{t: t, base: in.ts.URL, dev: dev}
}

func (c client) on(in *instance) client { c.base = in.ts.URL; return c }

// trpcResp is one tRPC response envelope.
type trpcResp struct {
	Result *struct {
		Data json.RawMessage `json:"data"`
	} `json:"result"`
	Error *wire.ErrorShape `json:"error"`
}

// do sends a request with the client's token (token "" = none) and returns
// the status and raw body.
func (c client) do(method, path string, body []byte, token string) (int, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return res.StatusCode, b
}

func decode[T any](t testing.TB, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	return v
}

// envelope builds a command envelope of the client's device.
func (c client) envelope(id, page, typ string, payload any) []byte {
	b, err := json.Marshal(map[string]any{"id": id, "device_id": c.dev.DeviceID, "page_id": page, "type": typ, "payload": payload})
	if err != nil {
		c.t.Fatal(err)
	}
	return b
}

// command posts one envelope to kb.command.
func (c client) command(id, page, typ string, payload any) (int, trpcResp) {
	c.t.Helper()
	status, b := c.do("POST", "/trpc/kb.command", c.envelope(id, page, typ, payload), c.dev.Token)
	return status, decode[trpcResp](c.t, b)
}

// mustCommit posts a command that must commit and returns its seq.
func (c client) mustCommit(page, typ string, payload any) int64 {
	c.t.Helper()
	status, r := c.command(uuid.NewString(), page, typ, payload)
	if status != 200 || r.Result == nil {
		c.t.Fatalf("%s on %s: status %d, error %+v", typ, page, status, r.Error)
	}
	return decode[wire.CommandResult](c.t, r.Result.Data).Seq
}

// newPage creates a page with one text node "n" (seqs 1 and 2).
func (c client) newPage() string {
	c.t.Helper()
	page := uuid.NewString()
	c.mustCommit(page, "create-page", map[string]any{"title": "Page " + page})
	c.mustCommit(page, "create-after", map[string]any{"node": "n", "text": ""})
	return page
}

// rows counts the rows of the tables a command writes.
type rows struct{ log, pages, nodes, index, seqs int }

func countRows(t *testing.T, st *store.Store) rows {
	t.Helper()
	var r rows
	err := st.Pool().QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM command_log), (SELECT count(*) FROM pages),
		(SELECT count(*) FROM nodes),
		(SELECT count(*) FROM links) + (SELECT count(*) FROM labels) + (SELECT count(*) FROM deps),
		(SELECT coalesce(sum(seq), 0) FROM pages)`).Scan(&r.log, &r.pages, &r.nodes, &r.index, &r.seqs)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func wantError(t *testing.T, status int, r trpcResp, wantStatus int, wantCode string) {
	t.Helper()
	if status != wantStatus || r.Error == nil || r.Error.Data.Code != wantCode {
		t.Fatalf("got status %d, error %+v; want %d %s", status, r.Error, wantStatus, wantCode)
	}
	ci := wire.Codes[wantCode]
	if r.Error.Code != ci.RPC || r.Error.Data.HTTPStatus != wantStatus {
		t.Fatalf("error shape %+v: want code %d, httpStatus %d", r.Error, ci.RPC, wantStatus)
	}
}

// ---- HTTP ----

func TestCommandCommitRejectDedup(t *testing.T) {
	in := newInstance(t, pgprovider.ForTest(t), Options{})
	c := pair(t, in, "acme")
	page := uuid.NewString()

	id := uuid.NewString()
	status, r := c.command(id, page, "create-page", map[string]any{"title": "Budget"})
	if status != 200 || r.Result == nil || string(r.Result.Data) != `{"seq":1}` {
		t.Fatalf("create-page: %d %s %+v", status, r.Result.Data, r.Error)
	}
	// The same id again: the original outcome.
	status, r = c.command(id, page, "create-page", map[string]any{"title": "Budget"})
	if status != 200 || string(r.Result.Data) != `{"seq":1,"duplicate":true}` {
		t.Fatalf("retried create-page: %d %s", status, r.Result.Data)
	}
	if seq := c.mustCommit(page, "create-after", map[string]any{"node": "n1", "text": "cash: 10"}); seq != 2 {
		t.Fatalf("create-after seq %d, want 2", seq)
	}

	// A rejection is CONFLICT with the rejection; a retry gets the same.
	rej := uuid.NewString()
	before := countRows(t, in.st)
	for range 2 {
		status, r = c.command(rej, page, "edit-text", map[string]any{"node": "missing", "text": "x"})
		wantError(t, status, r, 409, wire.CodeConflict)
		if r.Error.Data.Rejection == nil || r.Error.Data.Rejection.Code != "node-not-found" || r.Error.Data.Path != wire.PathCommand {
			t.Fatalf("rejection: %+v", r.Error.Data)
		}
	}
	after := countRows(t, in.st)
	if after.log != before.log+1 || after.seqs != before.seqs {
		t.Fatalf("a rejection logs one row and advances no seq: before %+v after %+v", before, after)
	}
	if seq := c.mustCommit(page, "edit-text", map[string]any{"node": "n1", "text": "cash: 20"}); seq != 3 {
		t.Fatalf("edit-text seq %d, want 3 (a rejection takes no seq)", seq)
	}
}

func TestPagePendingOutcomes(t *testing.T) {
	in := newInstance(t, pgprovider.ForTest(t), Options{})
	c := pair(t, in, "acme")
	page := c.newPage()
	ok := uuid.NewString()
	if s, r := c.command(ok, page, "edit-text", map[string]any{"node": "n", "text": "hello"}); s != 200 {
		t.Fatalf("edit: %d %+v", s, r.Error)
	}
	bad := uuid.NewString()
	if s, _ := c.command(bad, page, "indent", map[string]any{"node": "n"}); s != 409 {
		t.Fatalf("indent of a first child: status %d, want 409", s)
	}
	unknown := uuid.NewString()
	input, _ := json.Marshal(wire.PageInput{PageID: page, Pending: []string{ok, bad, unknown}})
	status, b := c.do("GET", "/trpc/kb.page?input="+url.QueryEscape(string(input)), nil, c.dev.Token)
	if status != 200 {
		t.Fatalf("kb.page: %d %s", status, b)
	}
	type pageResp struct {
		Result struct {
			Data struct {
				Doc      json.RawMessage            `json:"doc"`
				Seq      int64                      `json:"seq"`
				Outcomes map[string]json.RawMessage `json:"outcomes"`
			} `json:"data"`
		} `json:"result"`
	}
	res := decode[pageResp](t, b)
	d := res.Result.Data
	if d.Seq != 3 {
		t.Errorf("seq %d, want 3", d.Seq)
	}
	if !strings.Contains(string(d.Doc), `"text":"hello"`) || !strings.HasPrefix(string(d.Doc), `{"nodes":[`) {
		t.Errorf("doc is not the canonical document: %s", d.Doc)
	}
	if got := string(d.Outcomes[ok]); got != `{"seq":3}` {
		t.Errorf("outcome of the committed id: %s", got)
	}
	if got := string(d.Outcomes[bad]); !strings.Contains(got, `"rejected":{"code":"no-previous-sibling"`) {
		t.Errorf("outcome of the rejected id: %s", got)
	}
	if _, ok := d.Outcomes[unknown]; ok || len(d.Outcomes) != 2 {
		t.Errorf("outcomes %v: an id never seen must be absent", d.Outcomes)
	}
}

func TestBatch(t *testing.T) {
	in := newInstance(t, pgprovider.ForTest(t), Options{})
	c := pair(t, in, "acme")
	page := uuid.NewString()
	body := fmt.Sprintf(`{"0":%s,"1":%s}`,
		c.envelope(uuid.NewString(), page, "create-page", map[string]any{"title": "Batch"}),
		c.envelope(uuid.NewString(), page, "create-after", map[string]any{"node": "a", "text": "A"}))
	status, b := c.do("POST", "/trpc/kb.command,kb.command?batch=1", []byte(body), c.dev.Token)
	res := decode[[]trpcResp](t, b)
	if status != 200 || len(res) != 2 || string(res[0].Result.Data) != `{"seq":1}` || string(res[1].Result.Data) != `{"seq":2}` {
		t.Fatalf("batch of two commands: %d %s", status, b)
	}

	// Mixed outcomes: 207 Multi-Status, one envelope per call.
	body = fmt.Sprintf(`{"0":%s,"1":%s}`,
		c.envelope(uuid.NewString(), page, "edit-text", map[string]any{"node": "a", "text": "B"}),
		c.envelope(uuid.NewString(), page, "edit-text", map[string]any{"node": "zz", "text": "B"}))
	status, b = c.do("POST", "/trpc/kb.command,kb.command?batch=1", []byte(body), c.dev.Token)
	res = decode[[]trpcResp](t, b)
	if status != 207 || len(res) != 2 || res[0].Result == nil || res[1].Error == nil || res[1].Error.Data.Code != wire.CodeConflict {
		t.Fatalf("mixed batch: %d %s", status, b)
	}

	// A batch of queries over GET.
	in1, _ := json.Marshal(wire.PageInput{PageID: page})
	q := fmt.Sprintf(`{"0":%s,"1":%s}`, in1, in1)
	status, b = c.do("GET", "/trpc/kb.page,kb.page?batch=1&input="+url.QueryEscape(q), nil, c.dev.Token)
	res = decode[[]trpcResp](t, b)
	if status != 200 || len(res) != 2 || res[1].Result == nil || !strings.Contains(string(res[1].Result.Data), `"seq":3`) {
		t.Fatalf("batch of two queries: %d %s", status, b)
	}

	// Unknown procedure and wrong method, per call.
	status, b = c.do("GET", "/trpc/kb.page,kb.nope?batch=1&input="+url.QueryEscape(fmt.Sprintf(`{"0":%s}`, in1)), nil, c.dev.Token)
	res = decode[[]trpcResp](t, b)
	if status != 207 || res[1].Error == nil || res[1].Error.Data.Code != wire.CodeNotFound {
		t.Fatalf("unknown procedure in a batch: %d %s", status, b)
	}
	status, b = c.do("GET", "/trpc/kb.command?input="+url.QueryEscape(string(in1)), nil, c.dev.Token)
	wantError(t, status, decode[trpcResp](t, b), 405, wire.CodeMethodNotSupported)
}

func TestTrustBoundaryWritesNothing(t *testing.T) {
	dsn := pgprovider.ForTest(t)
	in := newInstance(t, dsn, Options{})
	c := pair(t, in, "acme")
	other := pair(t, in, "globex")
	page := c.newPage()
	otherPage := other.newPage()

	big := strings.Repeat("x", DefaultMaxBody+1)
	cases := []struct {
		name       string
		method     string
		path       string
		body       []byte
		token      string
		wantStatus int
		wantCode   string
		wantInMsg  string
	}{
		{"no token", "POST", "/trpc/kb.command", c.envelope(uuid.NewString(), page, "edit-text", map[string]any{"node": "n", "text": "x"}), "", 401, wire.CodeUnauthorized, "token"},
		{"bad token", "POST", "/trpc/kb.command", c.envelope(uuid.NewString(), page, "edit-text", map[string]any{"node": "n", "text": "x"}), "kbk_nope", 401, wire.CodeUnauthorized, "token"},
		{"no token on kb.page", "GET", "/trpc/kb.page?input=" + url.QueryEscape(`{"page_id":"`+page+`"}`), nil, "", 401, wire.CodeUnauthorized, ""},
		{"device mismatch", "POST", "/trpc/kb.command", other.envelope(uuid.NewString(), page, "edit-text", map[string]any{"node": "n", "text": "x"}), c.dev.Token, 403, wire.CodeForbidden, "device_id"},
		{"page of another workspace", "POST", "/trpc/kb.command", c.envelope(uuid.NewString(), otherPage, "edit-text", map[string]any{"node": "n", "text": "x"}), c.dev.Token, 404, wire.CodeNotFound, ""},
		{"create-page over another workspace's page", "POST", "/trpc/kb.command", c.envelope(uuid.NewString(), otherPage, "create-page", map[string]any{"title": "Mine"}), c.dev.Token, 404, wire.CodeNotFound, ""},
		{"kb.page of another workspace", "GET", "/trpc/kb.page?input=" + url.QueryEscape(`{"page_id":"`+otherPage+`"}`), nil, c.dev.Token, 404, wire.CodeNotFound, ""},
		{"unknown page, not create-page", "POST", "/trpc/kb.command", c.envelope(uuid.NewString(), uuid.NewString(), "edit-text", map[string]any{"node": "n", "text": "x"}), c.dev.Token, 404, wire.CodeNotFound, ""},
		{"kb.page of an unknown page", "GET", "/trpc/kb.page?input=" + url.QueryEscape(`{"page_id":"`+uuid.NewString()+`"}`), nil, c.dev.Token, 404, wire.CodeNotFound, ""},
		{"body too large", "POST", "/trpc/kb.command", c.envelope(uuid.NewString(), page, "edit-text", map[string]any{"node": "n", "text": big}), c.dev.Token, 413, wire.CodePayloadTooLarge, ""},
		{"GET input too large", "GET", "/trpc/kb.page?input=" + url.QueryEscape(`{"page_id":"`+big+`"}`), nil, c.dev.Token, 413, wire.CodePayloadTooLarge, ""},
		{"malformed JSON", "POST", "/trpc/kb.command", []byte(`{"id": "x",`), c.dev.Token, 400, wire.CodeParseError, "JSON"},
		{"unknown envelope field", "POST", "/trpc/kb.command", []byte(fmt.Sprintf(`{"id":%q,"device_id":%q,"page_id":%q,"type":"edit-text","payload":{"node":"n","text":"x"},"extra":1}`, uuid.NewString(), c.dev.DeviceID, page)), c.dev.Token, 400, wire.CodeBadRequest, "extra"},
		{"unknown payload field", "POST", "/trpc/kb.command", c.envelope(uuid.NewString(), page, "edit-text", map[string]any{"node": "n", "text": "x", "color": "red"}), c.dev.Token, 400, wire.CodeBadRequest, "color"},
		{"wrong type", "POST", "/trpc/kb.command", c.envelope(uuid.NewString(), page, "edit-text", map[string]any{"node": "n", "text": 42}), c.dev.Token, 400, wire.CodeBadRequest, "payload.text"},
		{"missing field", "POST", "/trpc/kb.command", c.envelope(uuid.NewString(), page, "edit-text", map[string]any{"node": "n"}), c.dev.Token, 400, wire.CodeBadRequest, "payload.text"},
		{"id not a uuid", "POST", "/trpc/kb.command", c.envelope("c1", page, "edit-text", map[string]any{"node": "n", "text": "x"}), c.dev.Token, 400, wire.CodeBadRequest, "id"},
		{"unknown type", "POST", "/trpc/kb.command", c.envelope(uuid.NewString(), page, "paint", map[string]any{}), c.dev.Token, 400, wire.CodeBadRequest, "type"},
		{"no input", "POST", "/trpc/kb.command", nil, c.dev.Token, 400, wire.CodeBadRequest, "input"},
		{"kb.page unknown field", "GET", "/trpc/kb.page?input=" + url.QueryEscape(`{"page_id":"`+page+`","x":1}`), nil, c.dev.Token, 400, wire.CodeBadRequest, "x"},
		{"kb.page wrong type", "GET", "/trpc/kb.page?input=" + url.QueryEscape(`{"page_id":7}`), nil, c.dev.Token, 400, wire.CodeBadRequest, "page_id"},
		{"kb.page malformed JSON", "GET", "/trpc/kb.page?input=" + url.QueryEscape(`{"page_id"`), nil, c.dev.Token, 400, wire.CodeParseError, ""},
		{"batch input not an object", "POST", "/trpc/kb.command?batch=1", []byte(`[1]`), c.dev.Token, 400, wire.CodeBadRequest, "batch"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := countRows(t, in.st)
			status, b := c.do(tc.method, tc.path, tc.body, tc.token)
			r := decode[trpcResp](t, b)
			wantError(t, status, r, tc.wantStatus, tc.wantCode)
			if !strings.Contains(r.Error.Message, tc.wantInMsg) {
				t.Errorf("message %q does not name %q", r.Error.Message, tc.wantInMsg)
			}
			if after := countRows(t, in.st); after != before {
				t.Errorf("rows written: before %+v, after %+v", before, after)
			}
		})
	}

	t.Run("rate limit", func(t *testing.T) {
		limited := newInstance(t, dsn, Options{RateLimit: RateLimit{PerSecond: 0.01, Burst: 2}})
		lc := c.on(limited)
		lc.mustCommit(page, "edit-text", map[string]any{"node": "n", "text": "1"})
		lc.mustCommit(page, "edit-text", map[string]any{"node": "n", "text": "2"})
		before := countRows(t, in.st)
		status, r := lc.command(uuid.NewString(), page, "edit-text", map[string]any{"node": "n", "text": "3"})
		wantError(t, status, r, 429, wire.CodeTooManyRequests)
		if after := countRows(t, in.st); after != before {
			t.Errorf("rows written: before %+v, after %+v", before, after)
		}
		// Another device has its own bucket.
		other.on(limited).mustCommit(otherPage, "edit-text", map[string]any{"node": "n", "text": "x"})
	})

	t.Run("websocket without token", func(t *testing.T) {
		_, res, err := websocket.Dial(context.Background(), wsURL(in.ts.URL, ""), nil)
		if err == nil || res == nil || res.StatusCode != 401 {
			t.Fatalf("dial without token: err %v, response %v", err, res)
		}
		h := http.Header{"Authorization": {"Bearer kbk_nope"}}
		_, res, err = websocket.Dial(context.Background(), wsURL(in.ts.URL, ""), &websocket.DialOptions{HTTPHeader: h})
		if err == nil || res == nil || res.StatusCode != 401 {
			t.Fatalf("dial with a bad token: err %v, response %v", err, res)
		}
	})

	t.Run("websocket bad connectionParams", func(t *testing.T) {
		ws := dialWS(t, in.ts.URL, "", "kbk_nope")
		r := readWS(t, ws)
		if r.Error == nil || r.Error.Data.Code != wire.CodeUnauthorized || string(r.ID) != "null" {
			t.Fatalf("reply to a bad token: %+v", r)
		}
		if _, _, err := ws.Read(context.Background()); websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
			t.Fatalf("socket not closed with 1008: %v", err)
		}
	})

	t.Run("websocket command of another device", func(t *testing.T) {
		before := countRows(t, in.st)
		ws := dialWS(t, in.ts.URL, c.dev.Token, "")
		sendWS(t, ws, map[string]any{"id": 1, "method": "mutation", "params": map[string]any{"path": wire.PathCommand,
			"input": json.RawMessage(other.envelope(uuid.NewString(), page, "edit-text", map[string]any{"node": "n", "text": "x"}))}})
		r := readWS(t, ws)
		if r.Error == nil || r.Error.Data.Code != wire.CodeForbidden || string(r.ID) != "1" {
			t.Fatalf("reply: %+v", r)
		}
		if after := countRows(t, in.st); after != before {
			t.Errorf("rows written: before %+v, after %+v", before, after)
		}
	})
}

func TestStoreErrorsAreNeverRejections(t *testing.T) {
	err := storeError(fmt.Errorf("%w: connection reset", store.ErrRetryable))
	if err.code != wire.CodeServiceUnavailable || !err.retryable || err.status() != 503 {
		t.Fatalf("transient failure: %+v", err)
	}
	sh := err.shape(wire.PathCommand)
	if sh.Code != -32603 || sh.Data.Rejection != nil || !sh.Data.Retryable {
		t.Fatalf("shape: %+v", sh)
	}
	if e := storeError(errors.New("boom")); e.code != wire.CodeInternalServerError {
		t.Fatalf("internal failure: %+v", e)
	}
	if e := storeError(store.ErrForbidden); e.code != wire.CodeNotFound {
		t.Fatalf("page of another workspace: %+v", e)
	}
}

func TestHealthAndMetrics(t *testing.T) {
	in := newInstance(t, pgprovider.ForTest(t), Options{})
	c := pair(t, in, "acme")
	c.newPage()
	if status, b := c.do("GET", "/healthz", nil, ""); status != 200 || !strings.Contains(string(b), "ok") {
		t.Fatalf("healthz: %d %s", status, b)
	}
	status, b := c.do("GET", "/trpc/kb.whoami", nil, c.dev.Token)
	// The device, and the workspace's name (PROTOCOL.md 4.3).
	want := `{"result":{"data":{"workspace_id":"` + c.dev.WorkspaceID + `","device_id":"` + c.dev.DeviceID + `","workspace":"acme"}}}`
	if status != 200 || strings.TrimSpace(string(b)) != want {
		t.Fatalf("kb.whoami: %d %s, want %s", status, b, want)
	}
	status, b = c.do("GET", "/metrics", nil, "")
	for _, want := range []string{`kbkit_commands_total{outcome="committed"} 2`, "kbkit_commit_duration_seconds_bucket",
		"kbkit_outbox_lag_seconds", "kbkit_subscribers", `kbkit_trpc_calls_total{code="OK",path="kb.command"} 2`} {
		if status != 200 || !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %q:\n%s", want, b)
		}
	}
	// Where the two commands' time went (spec/PROTOCOL.md 9): in the
	// server over HTTP, part of it in the store, in transactions that
	// decided both.
	v := func(name string) float64 { return metricValue(t, b, name) }
	inServer, inStore := v(`kbkit_command_seconds_total{transport="http"}`), v("kbkit_command_store_seconds_total")
	if inStore <= 0 || inServer < inStore {
		t.Errorf("kb.command: %.6fs in the server, %.6fs of it in the store", inServer, inStore)
	}
	decided := v(`kbkit_store_transaction_commands_total{path="optimistic"}`) + v(`kbkit_store_transaction_commands_total{path="usual"}`) +
		v(`kbkit_store_transaction_commands_total{path="alone"}`)
	if decided != 2 || v("kbkit_store_transaction_size_sum") != 2 || v("kbkit_store_transaction_size_count") < 1 {
		t.Errorf("2 commands decided, the metrics say %v (size histogram: sum %v count %v)", decided,
			v("kbkit_store_transaction_size_sum"), v("kbkit_store_transaction_size_count"))
	}
	if pg := v("kbkit_store_postgres_seconds_total"); pg <= 0 {
		t.Errorf("no time waiting for Postgres: %v", pg)
	}
}

// ---- WebSocket ----

func wsURL(base, query string) string {
	u := "ws" + strings.TrimPrefix(base, "http") + "/trpc"
	if query != "" {
		u += "?" + query
	}
	return u
}

// dialWS opens a socket: with headerToken as Authorization, or (when
// paramsToken is set) with tRPC v11 connectionParams.
func dialWS(t *testing.T, base, headerToken, paramsToken string) *websocket.Conn {
	t.Helper()
	opts := &websocket.DialOptions{HTTPHeader: http.Header{}}
	query := ""
	if headerToken != "" {
		opts.HTTPHeader.Set("Authorization", "Bearer "+headerToken)
	}
	if paramsToken != "" {
		query = "connectionParams=1"
	}
	ws, _, err := websocket.Dial(context.Background(), wsURL(base, query), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.CloseNow() })
	if paramsToken != "" {
		sendWS(t, ws, map[string]any{"method": "connectionParams", "data": map[string]string{"token": paramsToken}})
	}
	return ws
}

func sendWS(t *testing.T, ws *websocket.Conn, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Write(context.Background(), websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
}

// wsReply is any server message.
type wsReply struct {
	ID      json.RawMessage `json:"id"`
	JSONRPC string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	Result  *struct {
		Type string          `json:"type"`
		ID   string          `json:"id"`
		Data json.RawMessage `json:"data"`
	} `json:"result"`
	Error *wire.ErrorShape `json:"error"`
}

func readRaw(t *testing.T, ws *websocket.Conn) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, b, err := ws.Read(ctx)
	if err != nil {
		t.Fatalf("reading the socket: %v", err)
	}
	return b
}

func readWS(t *testing.T, ws *websocket.Conn) wsReply {
	t.Helper()
	return decode[wsReply](t, readRaw(t, ws))
}

// readEvents reads tracked kb.onPage events of subscription id until seq
// last, checking they come in order without gaps from first.
func readEvents(t *testing.T, ws *websocket.Conn, id string, first, last int64) []wire.PageEvent {
	t.Helper()
	var out []wire.PageEvent
	for next := first; next <= last; next++ {
		r := readWS(t, ws)
		if string(r.ID) != id || r.Result == nil || r.Result.Type != "data" {
			t.Fatalf("want event %d of subscription %s, got %s", next, id, mustJSON(r))
		}
		ev := decode[wire.PageEvent](t, r.Result.Data)
		if r.Result.ID != fmt.Sprint(next) || ev.Seq != next {
			t.Fatalf("want seq %d, got result.id %s, data %s", next, r.Result.ID, r.Result.Data)
		}
		out = append(out, ev)
	}
	return out
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func subscribe(t *testing.T, ws *websocket.Conn, id int, page string, lastEventID *string) {
	t.Helper()
	input := map[string]any{"page_id": page}
	params := map[string]any{"path": wire.PathOnPage, "input": input}
	if lastEventID != nil {
		params["lastEventId"] = *lastEventID
	}
	sendWS(t, ws, map[string]any{"id": id, "method": "subscription", "params": params})
	r := readWS(t, ws)
	if string(r.ID) != fmt.Sprint(id) || r.Result == nil || r.Result.Type != "started" {
		t.Fatalf("want started, got %s", mustJSON(r))
	}
}

func TestWebSocketSubscription(t *testing.T) {
	in := newInstance(t, pgprovider.ForTest(t), Options{})
	c := pair(t, in, "acme")
	page := c.newPage()
	c.mustCommit(page, "edit-text", map[string]any{"node": "n", "text": "three"})

	ws := dialWS(t, in.ts.URL, "", c.dev.Token) // v11 connectionParams

	// PING/PONG, answered even between requests.
	if err := ws.Write(context.Background(), websocket.MessageText, []byte("PING")); err != nil {
		t.Fatal(err)
	}
	if b := readRaw(t, ws); string(b) != "PONG" {
		t.Fatalf("PING answered %q", b)
	}

	// lastEventId "1": replay 2 and 3 from the log, then live.
	one := "1"
	subscribe(t, ws, 7, page, &one)
	evs := readEvents(t, ws, "7", 2, 3)
	if evs[1].Cmd.Type != "edit-text" || !strings.Contains(string(evs[1].Cmd.Payload), "three") {
		t.Fatalf("event 3: %+v", evs[1])
	}
	for i := range 5 {
		c.mustCommit(page, "edit-text", map[string]any{"node": "n", "text": fmt.Sprint("live ", i)})
	}
	readEvents(t, ws, "7", 4, 8)

	// A query and a mutation over the socket, batched as wsLink does.
	cmdID := uuid.NewString()
	sendWS(t, ws, []any{
		map[string]any{"id": 8, "jsonrpc": "2.0", "method": "mutation", "params": map[string]any{"path": wire.PathCommand,
			"input": json.RawMessage(c.envelope(cmdID, page, "edit-text", map[string]any{"node": "n", "text": "ws"}))}},
		map[string]any{"id": "q", "method": "query", "params": map[string]any{"path": wire.PathPage,
			"input": map[string]any{"page_id": page, "pending": []string{cmdID}}}},
	})
	var gotMutation, gotQuery, gotEvent bool
	for !(gotMutation && gotQuery && gotEvent) {
		r := readWS(t, ws)
		switch string(r.ID) {
		case "8":
			if r.Result == nil || string(r.Result.Data) != `{"seq":9}` || r.JSONRPC != "2.0" {
				t.Fatalf("mutation reply: %s", mustJSON(r))
			}
			gotMutation = true
		case `"q"`:
			if r.Result == nil || !strings.Contains(string(r.Result.Data), `"`+cmdID+`":{"seq":9}`) {
				t.Fatalf("query reply: %s", mustJSON(r))
			}
			gotQuery = true
		case "7":
			if r.Result == nil || r.Result.ID != "9" {
				t.Fatalf("event: %s", mustJSON(r))
			}
			gotEvent = true
		default:
			t.Fatalf("unexpected %s", mustJSON(r))
		}
	}

	// lastEventId in the input (as v11 merges it) on a second subscription.
	sendWS(t, ws, map[string]any{"id": 9, "method": "subscription", "params": map[string]any{"path": wire.PathOnPage,
		"input": map[string]any{"page_id": page, "lastEventId": "8"}}})
	if r := readWS(t, ws); r.Result == nil || r.Result.Type != "started" {
		t.Fatalf("second subscription: %s", mustJSON(r))
	}
	readEvents(t, ws, "9", 9, 9)

	// A duplicate id is refused.
	sendWS(t, ws, map[string]any{"id": 9, "method": "subscription", "params": map[string]any{"path": wire.PathOnPage,
		"input": map[string]any{"page_id": page}}})
	if r := readWS(t, ws); r.Error == nil || r.Error.Data.Code != wire.CodeBadRequest {
		t.Fatalf("duplicate id: %s", mustJSON(r))
	}

	// subscription.stop answers stopped; no more events for it.
	sendWS(t, ws, map[string]any{"id": 9, "method": "subscription.stop"})
	if r := readWS(t, ws); string(r.ID) != "9" || r.Result == nil || r.Result.Type != "stopped" {
		t.Fatalf("stop: %s", mustJSON(r))
	}
	c.mustCommit(page, "edit-text", map[string]any{"node": "n", "text": "after stop"})
	readEvents(t, ws, "7", 10, 10) // only subscription 7 gets seq 10

	// Malformed message: PARSE_ERROR with id null; the socket stays up.
	if err := ws.Write(context.Background(), websocket.MessageText, []byte("{nope")); err != nil {
		t.Fatal(err)
	}
	if r := readWS(t, ws); r.Error == nil || r.Error.Data.Code != wire.CodeParseError || string(r.ID) != "null" {
		t.Fatalf("malformed message: %s", mustJSON(r))
	}
	// Subscribing to a page of another workspace: NOT_FOUND.
	other := pair(t, in, "globex")
	otherPage := other.newPage()
	sendWS(t, ws, map[string]any{"id": 10, "method": "subscription", "params": map[string]any{"path": wire.PathOnPage,
		"input": map[string]any{"page_id": otherPage}}})
	if r := readWS(t, ws); r.Error == nil || r.Error.Data.Code != wire.CodeNotFound {
		t.Fatalf("foreign page: %s", mustJSON(r))
	}
}

func TestWebSocketHeaderAuthAndInvalidations(t *testing.T) {
	in := newInstance(t, pgprovider.ForTest(t), Options{})
	c := pair(t, in, "acme")
	ws := dialWS(t, in.ts.URL, c.dev.Token, "")
	sendWS(t, ws, map[string]any{"id": 1, "method": "subscription", "params": map[string]any{"path": wire.PathOnInvalidate,
		"input": map[string]any{"topics": []string{TopicDirectory}}}})
	if r := readWS(t, ws); r.Result == nil || r.Result.Type != "started" {
		t.Fatalf("invalidation subscription: %s", mustJSON(r))
	}
	msgs := make(chan []byte, 16)
	go func() {
		for {
			_, b, err := ws.Read(context.Background())
			if err != nil {
				close(msgs)
				return
			}
			msgs <- b
		}
	}()
	next := func() wsReply {
		select {
		case b, ok := <-msgs:
			if !ok {
				t.Fatal("socket closed")
			}
			return decode[wsReply](t, b)
		case <-time.After(time.Minute): // a hang detector: a busy machine is slow, not stuck
			t.Fatal("no message")
		}
		return wsReply{}
	}
	// The listener starts with the first subscriber: create pages until
	// it reports one (the earlier ones may predate its LISTEN).
	var page string
	deadline := time.Now().Add(time.Minute) // a hang detector
	for found := false; !found; {
		page = uuid.NewString()
		c.mustCommit(page, "create-page", map[string]any{"title": "Dir " + page})
		select {
		case b := <-msgs:
			r := decode[wsReply](t, b)
			inv := decode[Invalidation](t, r.Result.Data)
			if inv.Topic != TopicDirectory || inv.Seq != 1 || string(r.ID) != "1" || r.Result.ID != "" {
				t.Fatalf("invalidation: %s", b)
			}
			found = inv.PageID == page
		case <-time.After(300 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("no invalidation for a create-page")
			}
		}
	}
	// A document-only command invalidates nothing; a rename does.
	c.mustCommit(page, "create-after", map[string]any{"node": "n", "text": "x"})
	c.mustCommit(page, "rename-page", map[string]any{"title": "Renamed " + page})
	for {
		r := next()
		inv := decode[Invalidation](t, r.Result.Data)
		if inv.PageID != page {
			continue // a late one of an earlier page
		}
		if inv.Seq != 3 {
			t.Fatalf("want only the rename's invalidation (seq 3), got %s", mustJSON(r))
		}
		break
	}
}

func TestShutdownSendsReconnect(t *testing.T) {
	in := newInstance(t, pgprovider.ForTest(t), Options{})
	c := pair(t, in, "acme")
	page := c.newPage()
	ws := dialWS(t, in.ts.URL, "", c.dev.Token)
	subscribe(t, ws, 1, page, nil)
	readEvents(t, ws, "1", 1, 2)

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- in.srv.Shutdown(ctx)
	}()
	if b := readRaw(t, ws); string(b) != `{"id":null,"method":"reconnect"}` {
		t.Fatalf("want the reconnect notification, got %s", b)
	}
	_, _, err := ws.Read(context.Background())
	if websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("want close 1001, got %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	// New sockets are refused; health says so.
	h := http.Header{"Authorization": {"Bearer " + c.dev.Token}}
	if _, res, err := websocket.Dial(context.Background(), wsURL(in.ts.URL, ""), &websocket.DialOptions{HTTPHeader: h}); err == nil || res.StatusCode != 503 {
		t.Fatalf("dial after Shutdown: %v %v", err, res)
	}
	if status, _ := c.do("GET", "/healthz", nil, ""); status != 503 {
		t.Fatalf("healthz after Shutdown: %d", status)
	}
}

// Two instances on one database: a subscriber on A sees the commands
// posted to B (and to A) in seq order, without gaps.
func TestTwoInstancesEchoOrder(t *testing.T) {
	dsn := pgprovider.ForTest(t)
	a := newInstance(t, dsn, Options{})
	b := newInstance(t, dsn, Options{})
	ca := pair(t, a, "acme")
	cb := ca.on(b)
	page := cb.newPage()

	wsA := dialWS(t, a.ts.URL, "", ca.dev.Token)
	subscribe(t, wsA, 1, page, nil)
	wsB := dialWS(t, b.ts.URL, ca.dev.Token, "")
	subscribe(t, wsB, 1, page, nil)

	const n = 40
	var wg sync.WaitGroup
	for w, cl := range []client{ca, cb} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n / 2 {
				id := uuid.NewString()
				for {
					status, r := cl.command(id, page, "edit-text", map[string]any{"node": "n", "text": fmt.Sprintf("w%d-%d", w, i)})
					if status == 200 {
						break
					}
					if status != 503 {
						t.Errorf("edit: %d %+v", status, r.Error)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	last := int64(2 + n)
	evA := readEvents(t, wsA, "1", 1, last)
	evB := readEvents(t, wsB, "1", 1, last)
	for i := range evA {
		if evA[i].Cmd.ID != evB[i].Cmd.ID {
			t.Fatalf("instances disagree at seq %d: %s vs %s", i+1, evA[i].Cmd.ID, evB[i].Cmd.ID)
		}
	}
}

// A subscriber the hub drops for being slow (dispatch.ErrSlow) is
// resubscribed by the server after its last seq: the client sees every
// event once, in order.
func TestSlowSubscriberIsResubscribed(t *testing.T) {
	in := newInstance(t, pgprovider.ForTest(t), Options{eventDelay: 20 * time.Millisecond}, dispatch.Buffer(1))
	c := pair(t, in, "acme")
	page := c.newPage()
	ws := dialWS(t, in.ts.URL, c.dev.Token, "")
	subscribe(t, ws, 1, page, nil)
	readEvents(t, ws, "1", 1, 2)
	// A burst committed while the client does not read.
	const n = 30
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n / 3 {
				c.mustCommit(page, "edit-text", map[string]any{"node": "n", "text": fmt.Sprint(w, i)})
			}
		}()
	}
	wg.Wait()
	readEvents(t, ws, "1", 3, 2+n)
	if in.srv.resubscribes.Load() == 0 {
		t.Error("the hub never dropped the slow subscriber: the test did not test anything")
	}
}

// BenchmarkFanoutEncode is the server's JSON work per kb.onPage event
// delivered to one subscriber: "per-subscriber" is an encoding of the
// whole message for each socket, "shared" the per-event encoding
// (dispatch.Event.Wire) plus each subscription's prefix, for 200
// subscribers of a page.
func BenchmarkFanoutEncode(b *testing.B) {
	const subs = 200
	cmd := kbcore.Command{ID: "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b", Type: kbcore.TypeEditText,
		Payload: json.RawMessage(`{"node":"n12","text":"the quick brown fox jumps over the lazy dog"}`)}
	m := wsMessage{ID: json.RawMessage(`1`)}
	b.Run("per-subscriber", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			ev := &dispatch.Event{PageID: "p", Entry: store.Entry{Seq: int64(i + 1), Cmd: cmd}}
			for s := 0; s < subs; s++ {
				_, _ = json.Marshal(wsResponse{ID: m.ID, Result: &wsResult{Type: "data", ID: strconv.FormatInt(ev.Seq, 10),
					Data: wire.PageEvent{Seq: ev.Seq, Cmd: ev.Cmd}}})
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*subs), "ns/echo")
	})
	b.Run("shared", func(b *testing.B) {
		b.ReportAllocs()
		prefix := eventPrefix(m)
		for i := 0; b.Loop(); i++ {
			ev := &dispatch.Event{PageID: "p", Entry: store.Entry{Seq: int64(i + 1), Cmd: cmd}}
			for s := 0; s < subs; s++ {
				bp := eventBufs.Get().(*[]byte)
				*bp = append(append((*bp)[:0], prefix...), ev.Wire(encodePageEvent)...)
				eventBufs.Put(bp)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*subs), "ns/echo")
	})
}

// The shared encoding of an event message is byte for byte the reply the
// server would encode for each subscriber, with and without jsonrpc.
func TestEventWireMatchesReply(t *testing.T) {
	cmd := kbcore.Command{ID: "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b", Type: kbcore.TypeEditText,
		Payload: json.RawMessage("{\"node\":\"n1\",\"text\":\"<a&b> é \u2028\"}")}
	ev := &dispatch.Event{PageID: "p", Entry: store.Entry{Seq: 42, Cmd: cmd}}
	for _, m := range []wsMessage{{ID: json.RawMessage(`7`)}, {ID: json.RawMessage(` "s-1" `), JSONRPC: "2.0"}} {
		want, err := marshalWire(wsResponse{ID: json.RawMessage(bytes.TrimSpace(m.ID)), JSONRPC: m.JSONRPC, Result: &wsResult{Type: "data", ID: "42",
			Data: wire.PageEvent{Seq: ev.Seq, Cmd: ev.Cmd}}})
		if err != nil {
			t.Fatal(err)
		}
		got := append(eventPrefix(m), ev.Wire(encodePageEvent)...)
		var g, w any
		if json.Unmarshal(got, &g) != nil || json.Unmarshal(want, &w) != nil || !reflect.DeepEqual(g, w) {
			t.Errorf("shared event message\n%s\nwant (the value of)\n%s", got, want)
		}
		data := got[bytes.Index(got, []byte(`"data":`))+len(`"data":`) : len(got)-2]
		if c, err := jcs.Transform(data); err != nil || !bytes.Equal(c, data) {
			t.Errorf("the event's data is not RFC 8785\n%s\njcs\n%s (%v)", data, c, err)
		}
	}
}

// A panic reached by one client's call is that call's
// INTERNAL_SERVER_ERROR, over HTTP and over the WebSocket; the process,
// the socket and every other call go on.
func TestPanicIsContained(t *testing.T) {
	in := newInstance(t, pgprovider.ForTest(t), Options{})
	c := pair(t, in, "acme")
	page := c.newPage()
	in.srv.beforeCall = func(path string) {
		if path == wire.PathWhoami {
			panic("a bug reached by input")
		}
	}
	status, b := c.do(http.MethodGet, "/trpc/"+wire.PathWhoami, nil, c.dev.Token)
	wantError(t, status, decode[trpcResp](t, b), http.StatusInternalServerError, wire.CodeInternalServerError)
	c.mustCommit(page, "create-after", map[string]any{"node": "n1", "text": "after the panic"})

	ws := dialWS(t, in.ts.URL, c.dev.Token, "")
	sendWS(t, ws, map[string]any{"id": 1, "method": "query", "params": map[string]any{"path": wire.PathWhoami, "input": map[string]any{}}})
	r := readWS(t, ws)
	if r.Error == nil || r.Error.Data.Code != wire.CodeInternalServerError || string(r.ID) != "1" {
		t.Fatalf("a panicking call over the WebSocket answered %s", mustJSON(r))
	}
	sendWS(t, ws, map[string]any{"id": 2, "method": "query", "params": map[string]any{"path": wire.PathPage, "input": map[string]any{"page_id": page}}})
	if r := readWS(t, ws); r.Error != nil || string(r.ID) != "2" {
		t.Fatalf("the socket's next call answered %s", mustJSON(r))
	}
	if _, m := c.do(http.MethodGet, "/metrics", nil, ""); !strings.Contains(string(m), "kbkit_recovered_panics_total 2\n") {
		t.Errorf("/metrics does not count the 2 panics")
	}
}

// Admission control: past MaxInflight running calls, a call waits at most
// QueueTimeout, then is refused with a retryable 503 and Retry-After.
func TestAdmissionQueueTimeout(t *testing.T) {
	in := newInstance(t, pgprovider.ForTest(t), Options{Limits: Limits{MaxInflight: 1, MaxQueue: 1, QueueTimeout: 200 * time.Millisecond}})
	c := pair(t, in, "acme")
	hold := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(hold) }) }
	t.Cleanup(release)
	entered := make(chan struct{}, 1)
	in.srv.beforeCall = func(path string) {
		if path == wire.PathLimits {
			entered <- struct{}{}
			<-hold
		}
	}
	go c.do(http.MethodGet, "/trpc/"+wire.PathLimits, nil, c.dev.Token) // takes the only slot
	<-entered
	start := time.Now()
	req, _ := http.NewRequest(http.MethodGet, in.ts.URL+"/trpc/"+wire.PathWhoami, nil)
	req.Header.Set("Authorization", "Bearer "+c.dev.Token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	waited := time.Since(start)
	r := decode[trpcResp](t, b)
	wantError(t, res.StatusCode, r, http.StatusServiceUnavailable, wire.CodeServiceUnavailable)
	if !r.Error.Data.Retryable || res.Header.Get("Retry-After") == "" {
		t.Errorf("the refusal is not retryable with Retry-After: %s %v", b, res.Header)
	}
	if waited < 200*time.Millisecond {
		t.Errorf("refused after %s, before the queue timeout", waited)
	}
	release()
	if status, _ := c.do(http.MethodGet, "/trpc/"+wire.PathWhoami, nil, c.dev.Token); status != http.StatusOK {
		t.Errorf("after the slot is free: HTTP %d", status)
	}
}

// An echo to a live subscriber and the same command replayed from the log
// are the same bytes, whatever the key order the client sent.
func TestLiveEchoEqualsReplay(t *testing.T) {
	in := newInstance(t, pgprovider.ForTest(t), Options{})
	c := pair(t, in, "acme")
	page := c.newPage()
	ws := dialWS(t, in.ts.URL, c.dev.Token, "")
	head := fmt.Sprint(c.mustCommit(page, "edit-text", map[string]any{"node": "n", "text": "head"}))
	subscribe(t, ws, 1, page, &head)
	id := uuid.NewString()
	body := []byte(`{"id":"` + id + `","device_id":"` + c.dev.DeviceID + `","page_id":"` + page +
		`","type":"create-after","payload":{ "text": "zebra first",  "node": "n1" }}`)
	if status, b := c.do(http.MethodPost, "/trpc/"+wire.PathCommand, body, c.dev.Token); status != http.StatusOK {
		t.Fatalf("HTTP %d %s", status, b)
	}
	live := readRaw(t, ws)
	ws2 := dialWS(t, in.ts.URL, c.dev.Token, "")
	subscribe(t, ws2, 1, page, &head)
	replayed := readRaw(t, ws2)
	if !bytes.Equal(live, replayed) {
		t.Errorf("live echo\n%s\nreplayed\n%s", live, replayed)
	}
	if !bytes.Contains(live, []byte(`{"node":"n1","text":"zebra first"}`)) {
		t.Errorf("the echo does not carry the payload in canonical JSON (RFC 8785): %s", live)
	}
}

// TestSpecListsTheMetrics: spec/PROTOCOL.md section 9's table names every
// kbkit_ metric the server exposes, and nothing it does not.
func TestSpecListsTheMetrics(t *testing.T) {
	in := newInstance(t, pgprovider.ForTest(t), Options{})
	c := pair(t, in, "acme")
	c.newPage()
	// A refusal (a batch past the cap), so that the refusals' family has
	// a series to expose.
	if status, _ := c.do("GET", "/trpc/"+strings.Repeat("kb.whoami,", 1000)+"kb.whoami?batch=1", nil, c.dev.Token); status != http.StatusRequestEntityTooLarge {
		t.Fatalf("a batch of 1,001 calls: %d", status)
	}
	_, b := c.do("GET", "/metrics", nil, "")
	served := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[1] == "TYPE" && strings.HasPrefix(f[2], "kbkit_") {
			served[f[2]] = true
		}
	}
	doc, err := fs.ReadFile(spec.FS, "PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, _ := strings.Cut(string(doc), "## 9. Operations")
	sec, _, _ = strings.Cut(sec, "\n## ")
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("`(kbkit_[a-z_]+)(\\{[a-z_,]*\\})?`").FindAllStringSubmatch(sec, -1) {
		listed[m[1]] = true
	}
	for name := range served {
		if !listed[name] {
			t.Errorf("the server exposes %s; spec/PROTOCOL.md section 9 does not list it", name)
		}
	}
	for name := range listed {
		if !served[name] {
			t.Errorf("spec/PROTOCOL.md section 9 lists %s; the server does not expose it", name)
		}
	}
	if len(served) < 10 {
		t.Fatalf("only %d kbkit_ metrics served", len(served))
	}
}

// metricValue is the value of the sample name (with its labels, as
// written) in a /metrics body; a missing or unreadable sample fails t.
func metricValue(t *testing.T, body []byte, name string) float64 {
	t.Helper()
	for line := range strings.SplitSeq(string(body), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == name {
			x, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return x
		}
	}
	t.Errorf("metrics lack %s", name)
	return 0
}
