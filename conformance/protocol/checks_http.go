package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/google/uuid"
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// bogusToken is a token no device has.
func bogusToken() string {
	return "kbk_protocol_check_" + strings.ReplaceAll(uuid.NewString(), "-", "")
}

// ---- kb.whoami, operations ----

func checkWhoami(ctx context.Context, e *Env) error {
	r, err := e.query(ctx, "kb.whoami", nil)
	if err != nil {
		return err
	}
	data, err := expectSuccess(r)
	if err != nil {
		return err
	}
	return whoamiData(r, data, e.WorkspaceID, e.DeviceID)
}

func whoamiData(r *Response, data json.RawMessage, ws, dev string) error {
	var d map[string]any
	if err := json.Unmarshal(data, &d); err != nil || d == nil {
		return r.fail(`{"workspace_id": UUID, "device_id": UUID}`, excerpt(data, 200), "kb.whoami's output is an object")
	}
	for _, k := range []string{"workspace_id", "device_id"} {
		s, ok := d[k].(string)
		if !ok || !uuidRE.MatchString(s) {
			return r.fail(k+": a lower-case hyphenated uuid", show(d[k]), "kb.whoami's %s", k)
		}
	}
	if d["workspace_id"] != ws || d["device_id"] != dev {
		return r.fail(fmt.Sprintf("workspace %s, device %s", ws, dev), excerpt(data, 200), "kb.whoami names another device")
	}
	return nil
}

func checkWhoamiInput(ctx context.Context, e *Env) error {
	r, err := e.query(ctx, "kb.whoami", map[string]any{})
	if err != nil {
		return err
	}
	data, err := expectSuccess(r)
	if err != nil {
		return step("kb.whoami with input {}", err)
	}
	if err := whoamiData(r, data, e.WorkspaceID, e.DeviceID); err != nil {
		return step("kb.whoami with input {}", err)
	}
	r, err = e.query(ctx, "kb.whoami", map[string]any{"bogus": 1})
	if err != nil {
		return err
	}
	es, err := expectError(r, "BAD_REQUEST", "kb.whoami")
	if err != nil {
		return step(`kb.whoami with an unknown field {"bogus":1}`, err)
	}
	return step(`kb.whoami with an unknown field`, messageNames(r, es, "bogus"))
}

func checkHealthz(ctx context.Context, e *Env) error {
	r, err := e.send(ctx, request{method: http.MethodGet, path: "/healthz", noAuth: true})
	if err != nil {
		return err
	}
	if r.Status != http.StatusOK {
		return r.fail("HTTP 200", fmt.Sprintf("HTTP %d", r.Status), "GET /healthz without a token")
	}
	var d struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(r.Body, &d); err != nil || d.Status != "ok" {
		return r.fail(`{"status":"ok"}`, excerpt(r.Body, 200), "GET /healthz's body")
	}
	return nil
}

func checkMetrics(ctx context.Context, e *Env) error {
	if _, err := e.newPage(ctx); err != nil { // so that the command counters exist
		return step("setup", err)
	}
	r, err := e.send(ctx, request{method: http.MethodGet, path: "/metrics", noAuth: true})
	if err != nil {
		return err
	}
	if r.Status != http.StatusOK {
		return r.fail("HTTP 200", fmt.Sprintf("HTTP %d", r.Status), "GET /metrics without a token")
	}
	for _, m := range []string{"kbkit_commands_total", "kbkit_commit_duration_seconds", "kbkit_outbox_lag_seconds",
		"kbkit_subscribers", "kbkit_websocket_connections", "kbkit_trpc_calls_total"} {
		if !bytes.Contains(r.Body, []byte(m)) {
			return r.fail(m, "no "+m, "GET /metrics lacks a metric of PROTOCOL.md 9")
		}
	}
	return nil
}

// ---- kb.command: outcomes ----

func checkCreatePage(ctx context.Context, e *Env) error {
	pid, cid := newID(), newID()
	title := "protocol check " + pid
	r, err := e.mutate(ctx, "kb.command", e.envelope(pid, cid, "create-page", map[string]any{"title": title}))
	if err != nil {
		return err
	}
	if r.Status != http.StatusOK {
		return r.fail(`HTTP 200 {"result":{"data":{"seq":1}}}`, fmt.Sprintf("HTTP %d", r.Status), "create-page of a new page")
	}
	if f := r.checkJSON(); f != nil {
		return f
	}
	var top map[string]json.RawMessage
	_ = json.Unmarshal(r.Body, &top)
	if _, ok := top["error"]; ok {
		return r.fail(`{"result":{"data":{"seq":1}}}`, excerpt(r.Body, 300), "a success has no error")
	}
	seq, dup, err := seqOf(r)
	if err != nil {
		return err
	}
	if seq != 1 || dup {
		return r.fail(`{"result":{"data":{"seq":1}}}`, excerpt(r.Body, 300), "create-page of a new page commits as the page's first command")
	}
	s, err := e.snapshot(ctx, pid, nil)
	if err != nil {
		return step("kb.page after create-page", err)
	}
	if s.seq != 1 {
		return s.r.fail("seq 1", fmt.Sprintf("seq %d", s.seq), "kb.page after create-page")
	}
	var doc struct {
		Page struct {
			ID    string `json:"id"`
			Title string `json:"title"`
		} `json:"page"`
	}
	if err := json.Unmarshal(s.doc, &doc); err != nil || doc.Page.ID != pid || doc.Page.Title != title {
		return s.r.fail(fmt.Sprintf(`doc.page {"id":%q,"title":%q}`, pid, title), excerpt(s.doc, 300), "kb.page's doc after create-page")
	}
	return nil
}

func checkCreatePageExisting(ctx context.Context, e *Env) error {
	p, err := e.newPage(ctx)
	if err != nil {
		return step("setup", err)
	}
	r, err := e.mutate(ctx, "kb.command", e.envelope(p.id, newID(), "create-page", map[string]any{"title": p.title + " again"}))
	if err != nil {
		return err
	}
	es, err := expectError(r, "CONFLICT", "kb.command")
	if err != nil {
		return step("create-page on an existing page", err)
	}
	if es.Data.Rejection.Code != "page-exists" {
		return r.fail("rejection page-exists", es.Data.Rejection.Code, "create-page on an existing page")
	}
	return e.unchanged(ctx, p)
}

func checkCommandSeq(ctx context.Context, e *Env) error {
	p, err := e.newPage(ctx)
	if err != nil {
		return step("setup", err)
	}
	if err := e.addNodes(ctx, p, 5); err != nil {
		return err
	}
	s, err := e.snapshot(ctx, p.id, nil)
	if err != nil {
		return err
	}
	if s.seq != 6 {
		return s.r.fail("seq 6", fmt.Sprintf("seq %d", s.seq), "kb.page after 6 commands")
	}
	return nil
}

func checkRetryCommitted(ctx context.Context, e *Env) error {
	p, err := e.newPage(ctx)
	if err != nil {
		return step("setup", err)
	}
	id := newID()
	body := rawJSON(e.envelope(p.id, id, "create-after", p.nodePayload(1)))
	r, err := e.mutate(ctx, "kb.command", body)
	if err != nil {
		return err
	}
	seq, _, err := seqOf(r)
	if err != nil {
		return step("first send", err)
	}
	if seq != 2 {
		return r.fail(`{"seq":2}`, excerpt(r.Body, 200), "first send")
	}
	for i := 1; i <= 2; i++ {
		r, err := e.mutate(ctx, "kb.command", body)
		if err != nil {
			return err
		}
		rseq, dup, err := seqOf(r)
		if err != nil {
			return step(fmt.Sprintf("retry %d of a committed id", i), err)
		}
		if rseq != seq || !dup {
			return r.fail(`{"result":{"data":{"seq":2,"duplicate":true}}}`, excerpt(r.Body, 200),
				"retry %d of a committed id: the original seq, marked duplicate (PROTOCOL.md 4.1)", i)
		}
	}
	p.nodes = 1
	p.record(2, id, "create-after", p.nodePayload(1))
	// The retries took no seq: the next command is seq 3.
	if err := e.addNodes(ctx, p, 1); err != nil {
		return step("after the retries (they must not take a seq)", err)
	}
	s, err := e.snapshot(ctx, p.id, []string{id})
	if err != nil {
		return err
	}
	if s.seq != 3 || !sameJSON(s.outcomes[id], []byte(`{"seq":2}`)) {
		return s.r.fail(fmt.Sprintf(`seq 3, outcomes {%q: {"seq":2}}`, id), excerpt(s.r.Body, 400), "kb.page after the retries")
	}
	return nil
}

func checkRetryCreatePage(ctx context.Context, e *Env) error {
	pid := newID()
	body := rawJSON(e.envelope(pid, newID(), "create-page", map[string]any{"title": "protocol check " + pid}))
	r, err := e.mutate(ctx, "kb.command", body)
	if err != nil {
		return err
	}
	if seq, _, err := seqOf(r); err != nil || seq != 1 {
		return step("create-page", r.fail(`{"seq":1}`, excerpt(r.Body, 200), "create-page of a new page"))
	}
	r, err = e.mutate(ctx, "kb.command", body)
	if err != nil {
		return err
	}
	seq, dup, err := seqOf(r)
	if err != nil {
		return step("retry of create-page", err)
	}
	if seq != 1 || !dup {
		return r.fail(`{"result":{"data":{"seq":1,"duplicate":true}}}`, excerpt(r.Body, 200),
			"a retried create-page gets its original outcome, not page-exists (PROTOCOL.md 4.1)")
	}
	s, err := e.snapshot(ctx, pid, nil)
	if err != nil {
		return err
	}
	if s.seq != 1 {
		return s.r.fail("seq 1", fmt.Sprintf("seq %d", s.seq), "kb.page after a retried create-page")
	}
	return nil
}

// rejectedIndent posts indent of the page's first node (no previous
// sibling) and checks the rejection.
func (e *Env) rejectedIndent(ctx context.Context, p *page) (body []byte, r *Response, es *errShape, err error) {
	body = rawJSON(e.envelope(p.id, newID(), "indent", map[string]any{"node": "n1"}))
	r, err = e.mutate(ctx, "kb.command", body)
	if err != nil {
		return nil, nil, nil, err
	}
	es, err = expectError(r, "CONFLICT", "kb.command")
	if err != nil {
		return nil, nil, nil, step("indent of a first child (rejected no-previous-sibling)", err)
	}
	if es.Data.Rejection.Code != "no-previous-sibling" {
		return nil, nil, nil, r.fail("rejection.code no-previous-sibling", es.Data.Rejection.Code, "indent of a first child")
	}
	return body, r, es, nil
}

func checkRejection(ctx context.Context, e *Env) error {
	p, err := e.newPage(ctx)
	if err != nil {
		return step("setup", err)
	}
	if err := e.addNodes(ctx, p, 1); err != nil {
		return err
	}
	_, r, es, err := e.rejectedIndent(ctx, p)
	if err != nil {
		return err
	}
	if es.Data.Rejection.Message == "" {
		return r.fail("rejection.message: a non-empty string", `""`, "the rejection has a message")
	}
	return e.unchanged(ctx, p)
}

func checkRejectionRetry(ctx context.Context, e *Env) error {
	p, err := e.newPage(ctx)
	if err != nil {
		return step("setup", err)
	}
	if err := e.addNodes(ctx, p, 1); err != nil {
		return err
	}
	// edit-text of a node that does not exist yet: rejected now...
	id := newID()
	body := rawJSON(e.envelope(p.id, id, "edit-text", map[string]any{"node": "n2", "text": "late"}))
	r, err := e.mutate(ctx, "kb.command", body)
	if err != nil {
		return err
	}
	first, err := expectError(r, "CONFLICT", "kb.command")
	if err != nil {
		return step("edit-text of a missing node", err)
	}
	if first.Data.Rejection.Code != "node-not-found" {
		return r.fail("rejection node-not-found", first.Data.Rejection.Code, "edit-text of a missing node")
	}
	// ...and it stays rejected once the node exists: decided once.
	if err := e.addNodes(ctx, p, 1); err != nil {
		return err
	}
	for i := 1; i <= 2; i++ {
		r, err := e.mutate(ctx, "kb.command", body)
		if err != nil {
			return err
		}
		es, err := expectError(r, "CONFLICT", "kb.command")
		if err != nil {
			return step(fmt.Sprintf("retry %d of a rejected id (the same 409, PROTOCOL.md 4.1)", i), err)
		}
		if es.Data.Rejection.Code != first.Data.Rejection.Code || es.Data.Rejection.Message != first.Data.Rejection.Message {
			return r.fail(show(first.Data.Rejection), show(es.Data.Rejection),
				"retry %d of a rejected id gets the same rejection, even once the command would commit", i)
		}
	}
	if err := e.unchanged(ctx, p); err != nil {
		return step("the retries", err)
	}
	s, err := e.snapshot(ctx, p.id, []string{id})
	if err != nil {
		return err
	}
	var o struct {
		Seq      *int64          `json:"seq"`
		Rejected json.RawMessage `json:"rejected"`
	}
	if err := json.Unmarshal(s.outcomes[id], &o); err != nil || o.Seq != nil || !sameJSON(o.Rejected, rawJSON(first.Data.Rejection)) {
		return s.r.fail(fmt.Sprintf(`outcomes[%s] = {"rejected":%s}`, id, show(first.Data.Rejection)), show(s.outcomes[id]),
			"kb.page's outcome of the rejected id")
	}
	return nil
}

func checkRejectionNoSeq(ctx context.Context, e *Env) error {
	p, err := e.newPage(ctx)
	if err != nil {
		return step("setup", err)
	}
	if err := e.addNodes(ctx, p, 1); err != nil {
		return err
	}
	for i := 0; i < 3; i++ {
		if _, _, _, err := e.rejectedIndent(ctx, p); err != nil {
			return err
		}
	}
	if err := e.addNodes(ctx, p, 1); err != nil {
		return step("the command after three rejections (they take no seq)", err)
	}
	return nil
}

// ---- kb.page ----

func checkPageSnapshot(ctx context.Context, e *Env) error {
	p, err := e.newPage(ctx)
	if err != nil {
		return step("setup", err)
	}
	if err := e.addNodes(ctx, p, 3); err != nil {
		return err
	}
	if _, err := e.commit(ctx, p, "edit-text", map[string]any{"node": "n2", "text": "cash: $610,000"}); err != nil {
		return step("setup", err)
	}
	want, err := json.Marshal(p.doc)
	if err != nil {
		return err
	}
	for _, pending := range [][]string{nil, {}} {
		s, err := e.snapshot(ctx, p.id, pending)
		if err != nil {
			return err
		}
		if s.seq != p.seq {
			return s.r.fail(fmt.Sprintf("seq %d", p.seq), fmt.Sprintf("seq %d", s.seq), "kb.page's seq is the last command's")
		}
		if len(s.outcomes) != 0 {
			return s.r.fail("outcomes {}", show(s.outcomes), "kb.page without pending ids has no outcomes")
		}
		var got bytes.Buffer
		if err := json.Compact(&got, s.doc); err != nil {
			return s.r.fail("a JSON document", excerpt(s.doc, 200), "kb.page's doc")
		}
		if !sameJSON(got.Bytes(), want) {
			return s.r.fail(string(want), got.String(), "kb.page's doc is the fold of the page's commands (spec/README.md 1)")
		}
		if !bytes.Equal(got.Bytes(), want) {
			return s.r.fail(string(want), got.String(), "kb.page's doc is not in canonical JSON (keys sorted, nodes sorted by id)")
		}
	}
	return nil
}

func checkPageOutcomes(ctx context.Context, e *Env) error {
	p, err := e.newPage(ctx)
	if err != nil {
		return step("setup", err)
	}
	if err := e.addNodes(ctx, p, 1); err != nil {
		return err
	}
	committed, err := e.commit(ctx, p, "edit-text", map[string]any{"node": "n1", "text": "edited"})
	if err != nil {
		return err
	}
	body, _, es, err := e.rejectedIndent(ctx, p)
	if err != nil {
		return err
	}
	var env struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(body, &env)
	rejected, unknown := env.ID, newID()
	s, err := e.snapshot(ctx, p.id, []string{committed, rejected, unknown})
	if err != nil {
		return err
	}
	if !sameJSON(s.outcomes[committed], []byte(fmt.Sprintf(`{"seq":%d}`, p.seq))) {
		return s.r.fail(fmt.Sprintf(`outcomes[%s] = {"seq":%d}`, committed, p.seq), show(s.outcomes[committed]), "the outcome of a committed pending id")
	}
	wantRej := rawJSON(map[string]any{"rejected": es.Data.Rejection})
	if !sameJSON(s.outcomes[rejected], wantRej) {
		return s.r.fail(fmt.Sprintf(`outcomes[%s] = %s`, rejected, wantRej), show(s.outcomes[rejected]), "the outcome of a rejected pending id")
	}
	if o, ok := s.outcomes[unknown]; ok {
		return s.r.fail("no outcome for an id never seen", string(o), "an id the server never saw is absent from outcomes")
	}
	if s.seq != p.seq {
		return s.r.fail(fmt.Sprintf("seq %d", p.seq), fmt.Sprintf("seq %d", s.seq), "kb.page's seq")
	}
	return nil
}

func checkPageOutcomesThisPage(ctx context.Context, e *Env) error {
	a, err := e.newPage(ctx)
	if err != nil {
		return step("setup", err)
	}
	b, err := e.newPage(ctx)
	if err != nil {
		return step("setup", err)
	}
	if err := e.addNodes(ctx, a, 1); err != nil {
		return err
	}
	id := a.cmds[2].ID
	s, err := e.snapshot(ctx, b.id, []string{id, a.cmds[1].ID})
	if err != nil {
		return err
	}
	if len(s.outcomes) != 0 {
		return s.r.fail("outcomes {}", show(s.outcomes), "outcomes are of ids decided on this page only (PROTOCOL.md 4.2)")
	}
	return nil
}

func checkPageNotFound(ctx context.Context, e *Env) error {
	r, err := e.query(ctx, "kb.page", map[string]any{"page_id": newID()})
	if err != nil {
		return err
	}
	_, err = expectError(r, "NOT_FOUND", "kb.page")
	return step("kb.page of a page that does not exist", err)
}

func checkPageBadInput(ctx context.Context, e *Env) error {
	for _, c := range []struct {
		input any
		field string
	}{
		{map[string]any{"page_id": "not-a-uuid"}, "page_id"},
		{map[string]any{"page_id": strings.ToUpper(newID())}, "page_id"},
		{map[string]any{"page_id": 5}, "page_id"},
		{map[string]any{}, "page_id"},
		{map[string]any{"page_id": newID(), "bogus": true}, "bogus"},
		{map[string]any{"page_id": newID(), "pending": []string{"x"}}, "pending"},
		{map[string]any{"page_id": newID(), "pending": "x"}, "pending"},
	} {
		r, err := e.query(ctx, "kb.page", c.input)
		if err != nil {
			return err
		}
		es, err := expectError(r, "BAD_REQUEST", "kb.page")
		if err != nil {
			return step("kb.page with input "+show(c.input), err)
		}
		if err := messageNames(r, es, c.field); err != nil {
			return step("kb.page with input "+show(c.input), err)
		}
	}
	r, err := e.query(ctx, "kb.page", nil)
	if err != nil {
		return err
	}
	_, err = expectError(r, "BAD_REQUEST", "kb.page")
	return step("kb.page without input", err)
}

func checkCommandUnknownPage(ctx context.Context, e *Env) error {
	pid, id := newID(), newID()
	body := rawJSON(e.envelope(pid, id, "edit-text", map[string]any{"node": "n1", "text": "x"}))
	r, err := e.mutate(ctx, "kb.command", body)
	if err != nil {
		return err
	}
	if _, err := expectError(r, "NOT_FOUND", "kb.command"); err != nil {
		return step("edit-text on a page that does not exist", err)
	}
	if err := e.absent(ctx, pid); err != nil {
		return err
	}
	// Not logged: once the page exists, the same id is decided afresh.
	cr, err := e.mutate(ctx, "kb.command", e.envelope(pid, newID(), "create-page", map[string]any{"title": "protocol check " + pid}))
	if err != nil {
		return err
	}
	if seq, _, err := seqOf(cr); err != nil || seq != 1 {
		return step("create-page after the refused command", cr.fail(`{"seq":1}`, excerpt(cr.Body, 200),
			"the refused command was not logged, so create-page is the page's seq 1"))
	}
	r, err = e.mutate(ctx, "kb.command", body)
	if err != nil {
		return err
	}
	es, err := expectError(r, "CONFLICT", "kb.command")
	if err != nil {
		return step("the NOT_FOUND command sent again once the page exists (it was never decided, so now it is: node-not-found)", err)
	}
	if es.Data.Rejection.Code != "node-not-found" {
		return r.fail("rejection node-not-found", es.Data.Rejection.Code, "the NOT_FOUND command sent again once the page exists")
	}
	return nil
}

// ---- the trust boundary ----

// refused posts body (as given) and checks the error, then that nothing
// was written to p.
func (e *Env) refused(ctx context.Context, p *page, rq request, code, path, field, what string) error {
	if rq.method == "" {
		rq.method = http.MethodPost
	}
	if rq.path == "" {
		rq.path = "/trpc/kb.command"
	}
	r, err := e.send(ctx, rq)
	if err != nil {
		return step(what, err)
	}
	es, err := expectError(r, code, path)
	if err != nil {
		return step(what, err)
	}
	if field != "" {
		if err := messageNames(r, es, field); err != nil {
			return step(what, err)
		}
	}
	var ids []string
	var env struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(rq.body, &env) == nil && uuidRE.MatchString(env.ID) {
		ids = append(ids, env.ID)
	}
	if p != nil {
		return step(what, e.unchanged(ctx, p, ids...))
	}
	return nil
}

// setupPage is a page with one node n1 (seq 2).
func (e *Env) setupPage(ctx context.Context) (*page, error) {
	p, err := e.newPage(ctx)
	if err != nil {
		return nil, step("setup", err)
	}
	return p, e.addNodes(ctx, p, 1)
}

func (p *page) next(e *Env) map[string]any {
	return e.envelope(p.id, newID(), "create-after", p.nodePayload(p.nodes+1))
}

func with(m map[string]any, k string, v any) map[string]any {
	out := map[string]any{}
	for kk, vv := range m {
		out[kk] = vv
	}
	if v == nil {
		delete(out, k)
	} else {
		out[k] = v
	}
	return out
}

func checkNoToken(ctx context.Context, e *Env) error {
	p, err := e.setupPage(ctx)
	if err != nil {
		return err
	}
	if err := e.refused(ctx, nil, request{method: http.MethodGet, path: "/trpc/kb.whoami", noAuth: true}, "UNAUTHORIZED", "", "", "kb.whoami without a token"); err != nil {
		return err
	}
	if err := e.refused(ctx, nil, request{method: http.MethodGet, path: "/trpc/kb.page", rawQuery: "input=" + encodeURIComponent(show(map[string]any{"page_id": p.id})), noAuth: true},
		"UNAUTHORIZED", "", "", "kb.page without a token"); err != nil {
		return err
	}
	return e.refused(ctx, p, request{body: rawJSON(p.next(e)), noAuth: true}, "UNAUTHORIZED", "", "", "kb.command without a token")
}

func checkBadToken(ctx context.Context, e *Env) error {
	p, err := e.setupPage(ctx)
	if err != nil {
		return err
	}
	bad := bogusToken()
	if err := e.refused(ctx, nil, request{method: http.MethodGet, path: "/trpc/kb.whoami", token: bad}, "UNAUTHORIZED", "", "", "kb.whoami with a token no device has"); err != nil {
		return err
	}
	if err := e.refused(ctx, p, request{body: rawJSON(p.next(e)), token: bad}, "UNAUTHORIZED", "", "", "kb.command with a token no device has"); err != nil {
		return err
	}
	// Not a bearer token at all.
	r, err := e.sendHeader(ctx, "/trpc/kb.whoami", "Authorization", "Basic "+bad)
	if err != nil {
		return err
	}
	_, err = expectError(r, "UNAUTHORIZED", "")
	return step("kb.whoami with Authorization: Basic", err)
}

// sendHeader is a GET with one raw header instead of the bearer token.
func (e *Env) sendHeader(ctx context.Context, path, key, value string) (*Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.BaseURL+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set(key, value)
	resp, err := e.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return &Response{Method: "GET", URL: e.BaseURL + path, Status: resp.StatusCode, Header: resp.Header, Body: buf.Bytes()}, nil
}

func checkForbiddenDevice(ctx context.Context, e *Env) error {
	p, err := e.setupPage(ctx)
	if err != nil {
		return err
	}
	if err := e.refused(ctx, p, request{body: rawJSON(with(p.next(e), "device_id", newID()))}, "FORBIDDEN", "kb.command", "",
		"kb.command whose device_id is not the token's"); err != nil {
		return err
	}
	pid := newID()
	if err := e.refused(ctx, nil, request{body: rawJSON(with(e.envelope(pid, newID(), "create-page", map[string]any{"title": "protocol check " + pid}), "device_id", newID()))},
		"FORBIDDEN", "kb.command", "", "create-page whose device_id is not the token's"); err != nil {
		return err
	}
	return e.absent(ctx, pid)
}

func checkParseError(ctx context.Context, e *Env) error {
	p, err := e.setupPage(ctx)
	if err != nil {
		return err
	}
	full := rawJSON(p.next(e))
	if err := e.refused(ctx, p, request{body: full[:len(full)-7]}, "PARSE_ERROR", "", "", "a truncated JSON body"); err != nil {
		return err
	}
	return e.refused(ctx, p, request{body: append(append([]byte{}, full...), []byte(` {"x":1}`)...)}, "PARSE_ERROR", "", "",
		"a body with trailing data after the JSON value")
}

func checkParseErrorGet(ctx context.Context, e *Env) error {
	r, err := e.send(ctx, request{method: http.MethodGet, path: "/trpc/kb.page", rawQuery: "input=" + encodeURIComponent(`{"page_id":`)})
	if err != nil {
		return err
	}
	_, err = expectError(r, "PARSE_ERROR", "")
	return step("GET kb.page with input that is not JSON", err)
}

func checkUnknownField(ctx context.Context, e *Env) error {
	p, err := e.setupPage(ctx)
	if err != nil {
		return err
	}
	return e.refused(ctx, p, request{body: rawJSON(with(p.next(e), "extra", true))}, "BAD_REQUEST", "kb.command", "extra",
		"an envelope with an unknown field")
}

func checkUnknownPayloadField(ctx context.Context, e *Env) error {
	p, err := e.setupPage(ctx)
	if err != nil {
		return err
	}
	env := p.next(e)
	env["payload"] = with(env["payload"].(map[string]any), "bogus", 1)
	return e.refused(ctx, p, request{body: rawJSON(env)}, "BAD_REQUEST", "kb.command", "bogus",
		"a payload with an unknown field (refused at the trust boundary, not rejected)")
}

func checkWrongType(ctx context.Context, e *Env) error {
	p, err := e.setupPage(ctx)
	if err != nil {
		return err
	}
	env := e.envelope(p.id, newID(), "edit-text", map[string]any{"node": "n1", "text": 5})
	if err := e.refused(ctx, p, request{body: rawJSON(env)}, "BAD_REQUEST", "kb.command", "text", "payload.text is a number"); err != nil {
		return err
	}
	if err := e.refused(ctx, p, request{body: rawJSON(with(p.next(e), "type", 7))}, "BAD_REQUEST", "kb.command", "type", "type is a number"); err != nil {
		return err
	}
	return e.refused(ctx, p, request{body: rawJSON(with(p.next(e), "payload", "n2"))}, "BAD_REQUEST", "kb.command", "payload", "payload is a string")
}

func checkMissingInput(ctx context.Context, e *Env) error {
	p, err := e.setupPage(ctx)
	if err != nil {
		return err
	}
	if err := e.refused(ctx, p, request{body: []byte{}}, "BAD_REQUEST", "kb.command", "", "an empty body (an absent input)"); err != nil {
		return err
	}
	for _, k := range []string{"id", "payload", "type", "page_id", "device_id"} {
		if err := e.refused(ctx, p, request{body: rawJSON(with(p.next(e), k, nil))}, "BAD_REQUEST", "kb.command", k, "an envelope without "+k); err != nil {
			return err
		}
	}
	env := p.next(e)
	env["payload"] = with(env["payload"].(map[string]any), "text", nil)
	return e.refused(ctx, p, request{body: rawJSON(env)}, "BAD_REQUEST", "kb.command", "text", "a create-after payload without text")
}

func checkBadUUID(ctx context.Context, e *Env) error {
	p, err := e.setupPage(ctx)
	if err != nil {
		return err
	}
	if err := e.refused(ctx, p, request{body: rawJSON(with(p.next(e), "id", "not-a-uuid"))}, "BAD_REQUEST", "kb.command", "id", "id is not a uuid"); err != nil {
		return err
	}
	if err := e.refused(ctx, p, request{body: rawJSON(with(p.next(e), "id", strings.ToUpper(newID())))}, "BAD_REQUEST", "kb.command", "id", "id is an upper-case uuid"); err != nil {
		return err
	}
	if err := e.refused(ctx, p, request{body: rawJSON(with(p.next(e), "page_id", strings.ToUpper(p.id)))}, "BAD_REQUEST", "kb.command", "page_id", "page_id is an upper-case uuid"); err != nil {
		return err
	}
	// The schema is checked before the device (trust boundary 5 before 6).
	return e.refused(ctx, p, request{body: rawJSON(with(p.next(e), "device_id", strings.ToUpper(e.DeviceID)))}, "BAD_REQUEST", "kb.command", "device_id",
		"device_id is the device's id in upper case (a schema error, not FORBIDDEN)")
}

func checkUnknownCommandType(ctx context.Context, e *Env) error {
	p, err := e.setupPage(ctx)
	if err != nil {
		return err
	}
	return e.refused(ctx, p, request{body: rawJSON(with(p.next(e), "type", "frobnicate"))}, "BAD_REQUEST", "kb.command", "type",
		"an unknown command type (refused at the trust boundary, not rejected)")
}

func (e *Env) bigText() string {
	n := max(300<<10, int(e.MaxBody)+(44<<10))
	return strings.Repeat("x", n)
}

func checkPayloadTooLarge(ctx context.Context, e *Env) error {
	p, err := e.setupPage(ctx)
	if err != nil {
		return err
	}
	env := p.next(e)
	env["payload"] = with(env["payload"].(map[string]any), "text", e.bigText())
	return e.refused(ctx, p, request{body: rawJSON(env)}, "PAYLOAD_TOO_LARGE", "", "",
		fmt.Sprintf("a kb.command body of %d bytes (over the %d-byte limit)", len(rawJSON(env)), e.MaxBody))
}

func checkGetInputTooLarge(ctx context.Context, e *Env) error {
	input := show(map[string]any{"page_id": newID(), "pad": e.bigText()})
	r, err := e.send(ctx, request{method: http.MethodGet, path: "/trpc/kb.page", rawQuery: "input=" + encodeURIComponent(input)})
	if err != nil {
		return err
	}
	_, err = expectError(r, "PAYLOAD_TOO_LARGE", "")
	return step(fmt.Sprintf("GET kb.page with an input of %d bytes", len(input)), err)
}

func checkUnsupportedMediaType(ctx context.Context, e *Env) error {
	for _, ct := range []string{"application/octet-stream", "multipart/form-data; boundary=xyz"} {
		pid := newID()
		body := rawJSON(e.envelope(pid, newID(), "create-page", map[string]any{"title": "protocol check " + pid}))
		if err := e.refused(ctx, nil, request{body: body, contentType: ct}, "UNSUPPORTED_MEDIA_TYPE", "", "", "create-page with Content-Type "+ct); err != nil {
			return err
		}
		if err := e.absent(ctx, pid); err != nil {
			return step("create-page with Content-Type "+ct, err)
		}
	}
	return nil
}

func checkMissingContentType(ctx context.Context, e *Env) error {
	pid := newID()
	r, err := e.send(ctx, request{method: http.MethodPost, path: "/trpc/kb.command", contentType: "-",
		body: rawJSON(e.envelope(pid, newID(), "create-page", map[string]any{"title": "protocol check " + pid}))})
	if err != nil {
		return err
	}
	seq, _, err := seqOf(r)
	if err != nil {
		return step("create-page without a Content-Type (read as JSON)", err)
	}
	if seq != 1 {
		return r.fail(`{"seq":1}`, excerpt(r.Body, 200), "create-page without a Content-Type")
	}
	return nil
}

func checkMethodNotSupported(ctx context.Context, e *Env) error {
	pid := newID()
	env := show(e.envelope(pid, newID(), "create-page", map[string]any{"title": "protocol check " + pid}))
	if err := e.refused(ctx, nil, request{method: http.MethodGet, rawQuery: "input=" + encodeURIComponent(env)}, "METHOD_NOT_SUPPORTED", "kb.command", "",
		"kb.command (a mutation) over GET"); err != nil {
		return err
	}
	if err := e.absent(ctx, pid); err != nil {
		return err
	}
	if err := e.refused(ctx, nil, request{path: "/trpc/kb.page", body: rawJSON(map[string]any{"page_id": pid})}, "METHOD_NOT_SUPPORTED", "kb.page", "",
		"kb.page (a query) over POST"); err != nil {
		return err
	}
	if err := e.refused(ctx, nil, request{path: "/trpc/kb.whoami", body: []byte(`{}`)}, "METHOD_NOT_SUPPORTED", "kb.whoami", "",
		"kb.whoami (a query) over POST"); err != nil {
		return err
	}
	return e.refused(ctx, nil, request{method: http.MethodGet, path: "/trpc/kb.onPage", rawQuery: "input=" + encodeURIComponent(show(map[string]any{"page_id": pid}))},
		"METHOD_NOT_SUPPORTED", "kb.onPage", "", "kb.onPage (a subscription) over HTTP")
}

func checkUnknownProcedure(ctx context.Context, e *Env) error {
	if err := e.refused(ctx, nil, request{method: http.MethodGet, path: "/trpc/kb.nope"}, "NOT_FOUND", "", "", "GET of an unknown procedure"); err != nil {
		return err
	}
	return e.refused(ctx, nil, request{path: "/trpc/kb.nope", body: []byte(`{}`)}, "NOT_FOUND", "", "", "POST of an unknown procedure")
}

func checkHead(ctx context.Context, e *Env) error {
	for _, path := range []string{"kb.whoami", "kb.command", "kb.page"} {
		r, err := e.send(ctx, request{method: http.MethodHead, path: "/trpc/" + path})
		if err != nil {
			return err
		}
		if r.Status != http.StatusNoContent || len(r.Body) != 0 {
			return r.fail("HTTP 204, no body", fmt.Sprintf("HTTP %d, %d bytes", r.Status, len(r.Body)), "HEAD /trpc/%s", path)
		}
	}
	return nil
}

func checkGetInputEncoding(ctx context.Context, e *Env) error {
	p, err := e.setupPage(ctx)
	if err != nil {
		return err
	}
	id := p.cmds[2].ID
	input := fmt.Sprintf("{\n  \"page_id\": \"%s\",\n  \"pending\": [ \"%s\" ]\n}", p.id, id)
	for _, enc := range []struct{ name, q string }{
		{"encodeURIComponent (%20 for spaces)", "input=" + encodeURIComponent(input)},
		{"form encoding (+ for spaces)", "input=" + strings.ReplaceAll(encodeURIComponent(input), "%20", "+")},
		{"input after another parameter", "x=1&input=" + encodeURIComponent(input)},
	} {
		r, err := e.send(ctx, request{method: http.MethodGet, path: "/trpc/kb.page", rawQuery: enc.q})
		if err != nil {
			return err
		}
		data, err := expectSuccess(r)
		if err != nil {
			return step("GET kb.page, input in "+enc.name, err)
		}
		s, err := pageData(r, data)
		if err != nil {
			return step("GET kb.page, input in "+enc.name, err)
		}
		if s.seq != 2 || !sameJSON(s.outcomes[id], []byte(`{"seq":2}`)) {
			return r.fail(fmt.Sprintf(`seq 2, outcomes {%q:{"seq":2}}`, id), excerpt(r.Body, 300), "GET kb.page, input in %s", enc.name)
		}
	}
	return nil
}

// ---- batching ----

// batchAnswer checks a batch answer's status and that it is an array of n
// and returns its elements.
func batchAnswer(r *Response, status, n int) ([]json.RawMessage, error) {
	if r.Status != status {
		return nil, r.fail(fmt.Sprintf("HTTP %d", status), fmt.Sprintf("HTTP %d", r.Status), "the status of a batch")
	}
	if f := r.checkJSON(); f != nil {
		return nil, f
	}
	var arr []json.RawMessage
	if err := json.Unmarshal(r.Body, &arr); err != nil || len(arr) != n {
		return nil, r.fail(fmt.Sprintf("a JSON array of %d answers", n), excerpt(r.Body, 300), "a batch answers an array, one answer per call in call order")
	}
	return arr, nil
}

func checkBatchCommands(ctx context.Context, e *Env) error {
	p, err := e.newPage(ctx)
	if err != nil {
		return step("setup", err)
	}
	e0 := e.envelope(p.id, newID(), "create-after", p.nodePayload(1))
	e1 := e.envelope(p.id, newID(), "create-after", p.nodePayload(2)) // after n1: only in order
	r, err := e.send(ctx, request{method: http.MethodPost, path: "/trpc/kb.command,kb.command", rawQuery: "batch=1",
		body: rawJSON(map[string]any{"0": e0, "1": e1})})
	if err != nil {
		return err
	}
	arr, err := batchAnswer(r, http.StatusOK, 2)
	if err != nil {
		return err
	}
	for i, el := range arr {
		data, err := successData(r, el)
		if err != nil {
			return step(fmt.Sprintf("call %d of the batch", i), err)
		}
		seq, _, err := seqData(r, data)
		if err != nil {
			return step(fmt.Sprintf("call %d of the batch", i), err)
		}
		if seq != int64(2+i) {
			return r.fail(fmt.Sprintf(`[{"result":{"data":{"seq":2}}},{"result":{"data":{"seq":3}}}]`), excerpt(r.Body, 300),
				"the calls of a batch run in order (PROTOCOL.md 3.1)")
		}
	}
	s, err := e.snapshot(ctx, p.id, nil)
	if err != nil {
		return err
	}
	if s.seq != 3 {
		return s.r.fail("seq 3", fmt.Sprintf("seq %d", s.seq), "kb.page after the batch")
	}
	return nil
}

func checkBatchQueries(ctx context.Context, e *Env) error {
	p, err := e.newPage(ctx)
	if err != nil {
		return step("setup", err)
	}
	input := show(map[string]any{"0": map[string]any{"page_id": p.id}})
	r, err := e.send(ctx, request{method: http.MethodGet, path: "/trpc/kb.page,kb.whoami", rawQuery: "batch=1&input=" + encodeURIComponent(input)})
	if err != nil {
		return err
	}
	arr, err := batchAnswer(r, http.StatusOK, 2)
	if err != nil {
		return err
	}
	data, err := successData(r, arr[0])
	if err != nil {
		return step("call 0 (kb.page)", err)
	}
	s, err := pageData(r, data)
	if err != nil {
		return step("call 0 (kb.page)", err)
	}
	if s.seq != 1 {
		return r.fail("seq 1", fmt.Sprintf("seq %d", s.seq), "call 0 (kb.page)")
	}
	data, err = successData(r, arr[1])
	if err != nil {
		return step("call 1 (kb.whoami, no input)", err)
	}
	return step("call 1 (kb.whoami, no input)", whoamiData(r, data, e.WorkspaceID, e.DeviceID))
}

func checkBatchMixedStatus(ctx context.Context, e *Env) error {
	p, err := e.newPage(ctx)
	if err != nil {
		return step("setup", err)
	}
	e0 := e.envelope(p.id, newID(), "create-after", p.nodePayload(1))
	e1 := e.envelope(p.id, newID(), "indent", map[string]any{"node": "n1"})
	r, err := e.send(ctx, request{method: http.MethodPost, path: "/trpc/kb.command,kb.command", rawQuery: "batch=1",
		body: rawJSON(map[string]any{"0": e0, "1": e1})})
	if err != nil {
		return err
	}
	arr, err := batchAnswer(r, http.StatusMultiStatus, 2)
	if err != nil {
		return step("a batch of a committed and a rejected command (statuses differ: 207)", err)
	}
	data, err := successData(r, arr[0])
	if err != nil {
		return step("call 0", err)
	}
	if seq, _, err := seqData(r, data); err != nil || seq != 2 {
		return r.fail(`{"result":{"data":{"seq":2}}}`, excerpt(arr[0], 200), "call 0 of the batch")
	}
	es, err := errorObject(r, arr[1], "CONFLICT", "kb.command")
	if err != nil {
		return step("call 1 of the batch", err)
	}
	if es.Data.Rejection.Code != "no-previous-sibling" {
		return r.fail("rejection no-previous-sibling", es.Data.Rejection.Code, "call 1 of the batch")
	}
	return nil
}

func checkBatchUnknownProcedure(ctx context.Context, e *Env) error {
	r, err := e.send(ctx, request{method: http.MethodGet, path: "/trpc/kb.whoami,kb.nope", rawQuery: "batch=1"})
	if err != nil {
		return err
	}
	arr, err := batchAnswer(r, http.StatusMultiStatus, 2)
	if err != nil {
		return err
	}
	data, err := successData(r, arr[0])
	if err != nil {
		return step("call 0 (kb.whoami)", err)
	}
	if err := whoamiData(r, data, e.WorkspaceID, e.DeviceID); err != nil {
		return step("call 0 (kb.whoami)", err)
	}
	_, err = errorObject(r, arr[1], "NOT_FOUND", "")
	return step("call 1 (kb.nope)", err)
}

func checkBatchRequestErrors(ctx context.Context, e *Env) error {
	p, err := e.setupPage(ctx)
	if err != nil {
		return err
	}
	batch := func(body []byte, noAuth bool) request {
		return request{method: http.MethodPost, path: "/trpc/kb.command,kb.command", rawQuery: "batch=1", body: body, noAuth: noAuth}
	}
	one := func(rq request, code, what string) error {
		r, err := e.send(ctx, rq)
		if err != nil {
			return err
		}
		if bytes.HasPrefix(bytes.TrimSpace(r.Body), []byte("[")) {
			return r.fail(`one {"error": ...} object`, excerpt(r.Body, 300), "%s: a failure of the whole request is one error object, not an array (PROTOCOL.md 3.2)", what)
		}
		_, err = expectError(r, code, "")
		return step(what, err)
	}
	e0, e1 := p.next(e), with(p.next(e), "id", newID())
	if err := one(batch(rawJSON(map[string]any{"0": e0, "1": e1}), true), "UNAUTHORIZED", "a batch without a token"); err != nil {
		return err
	}
	if err := e.unchanged(ctx, p, e0["id"].(string), e1["id"].(string)); err != nil {
		return err
	}
	if err := one(batch(rawJSON([]any{e0, e1}), false), "BAD_REQUEST", "a batch whose input is an array, not an object"); err != nil {
		return err
	}
	if err := one(batch([]byte(`{"0": {"id": `), false), "PARSE_ERROR", "a batch whose input is not JSON"); err != nil {
		return err
	}
	return e.unchanged(ctx, p, e0["id"].(string), e1["id"].(string))
}

// checkTrustBoundaryOrder sends requests that fail two checks of
// PROTOCOL.md 7 at once: the first failing check answers.
func checkTrustBoundaryOrder(ctx context.Context, e *Env) error {
	p, err := e.setupPage(ctx)
	if err != nil {
		return err
	}
	big := p.next(e)
	big["payload"] = with(big["payload"].(map[string]any), "text", e.bigText())
	bigBody := rawJSON(big)
	cases := []struct {
		what string
		rq   request
		code string
	}{
		{"no token and a body that is not JSON: authentication first (1 before 2)",
			request{body: []byte(`{"id":`), noAuth: true}, "UNAUTHORIZED"},
		{"a bad token and a body over the limit: authentication first (1 before 2)",
			request{body: bigBody, token: bogusToken()}, "UNAUTHORIZED"},
		{"a body over the limit that is not JSON: size first (413 before 400)",
			request{body: bigBody[:len(bigBody)-3]}, "PAYLOAD_TOO_LARGE"},
		{"an unknown procedure with a body that is not JSON: request shape first (2 before 3)",
			request{path: "/trpc/kb.nope", body: []byte(`{"id":`)}, "PARSE_ERROR"},
		{"kb.command over GET with an invalid envelope: method first (3 before 5)",
			request{method: http.MethodGet, rawQuery: "input=" + encodeURIComponent(show(with(p.next(e), "extra", 1)))}, "METHOD_NOT_SUPPORTED"},
		{"an invalid envelope of another device: schema first (5 before 6)",
			request{body: rawJSON(with(with(p.next(e), "extra", 1), "device_id", newID()))}, "BAD_REQUEST"},
		{"another device's command on a page that does not exist: device first (6 before 7)",
			request{body: rawJSON(with(e.envelope(newID(), newID(), "edit-text", map[string]any{"node": "n1", "text": "x"}), "device_id", newID()))}, "FORBIDDEN"},
	}
	for _, c := range cases {
		if err := e.refused(ctx, p, c.rq, c.code, "", "", c.what); err != nil {
			return err
		}
	}
	return nil
}
