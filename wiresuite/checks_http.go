package wiresuite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/subspace/kbkit/wire"

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
	if _, err := e.setupPage(ctx, 0); err != nil { // so that the command counters exist
		return err
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
	p, err := e.setupPage(ctx, 0)
	if err != nil {
		return err
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
	p, err := e.setupPage(ctx, 5)
	if err != nil {
		return err
	}
	return e.pageAt(ctx, p.id, 6, "kb.page after 6 commands")
}

func checkRetryCommitted(ctx context.Context, e *Env) error {
	p, err := e.setupPage(ctx, 0)
	if err != nil {
		return err
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
	return e.pageAt(ctx, pid, 1, "kb.page after a retried create-page")
}

// rejectedIndent posts indent of the page's first node (no previous
// sibling) and checks the rejection.
func (e *Env) rejectedIndent(ctx context.Context, p *page) (body []byte, r *Response, es *wire.ErrorShape, err error) {
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
	p, err := e.setupPage(ctx, 1)
	if err != nil {
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
	p, err := e.setupPage(ctx, 1)
	if err != nil {
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
	p, err := e.setupPage(ctx, 1)
	if err != nil {
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
	p, err := e.setupPage(ctx, 3)
	if err != nil {
		return err
	}
	if _, err := e.commit(ctx, p, "edit-text", map[string]any{"node": "n2", "text": byteRules}); err != nil {
		return step("setup", err)
	}
	want, err := p.doc.MarshalJSON()
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
		if err := s.isDoc(want, "spec/README.md 1"); err != nil {
			return err
		}
	}
	return nil
}

func checkPageOutcomes(ctx context.Context, e *Env) error {
	p, err := e.setupPage(ctx, 1)
	if err != nil {
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
	a, err := e.setupPage(ctx, 0)
	if err != nil {
		return err
	}
	b, err := e.setupPage(ctx, 0)
	if err != nil {
		return err
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
