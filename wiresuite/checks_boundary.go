package wiresuite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

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
	p, err := e.setupPage(ctx, 1)
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
	p, err := e.setupPage(ctx, 1)
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
	p, err := e.setupPage(ctx, 1)
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
	p, err := e.setupPage(ctx, 1)
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
	p, err := e.setupPage(ctx, 1)
	if err != nil {
		return err
	}
	return e.refused(ctx, p, request{body: rawJSON(with(p.next(e), "extra", true))}, "BAD_REQUEST", "kb.command", "extra",
		"an envelope with an unknown field")
}

func checkUnknownPayloadField(ctx context.Context, e *Env) error {
	p, err := e.setupPage(ctx, 1)
	if err != nil {
		return err
	}
	env := p.next(e)
	env["payload"] = with(env["payload"].(map[string]any), "bogus", 1)
	return e.refused(ctx, p, request{body: rawJSON(env)}, "BAD_REQUEST", "kb.command", "bogus",
		"a payload with an unknown field (refused at the trust boundary, not rejected)")
}

func checkWrongType(ctx context.Context, e *Env) error {
	p, err := e.setupPage(ctx, 1)
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
	p, err := e.setupPage(ctx, 1)
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
	p, err := e.setupPage(ctx, 1)
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
	p, err := e.setupPage(ctx, 1)
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
	p, err := e.setupPage(ctx, 1)
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
	p, err := e.setupPage(ctx, 1)
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
	p, err := e.setupPage(ctx, 0)
	if err != nil {
		return err
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
	return e.pageAt(ctx, p.id, 3, "kb.page after the batch")
}

func checkBatchQueries(ctx context.Context, e *Env) error {
	p, err := e.setupPage(ctx, 0)
	if err != nil {
		return err
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
	p, err := e.setupPage(ctx, 0)
	if err != nil {
		return err
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
	p, err := e.setupPage(ctx, 1)
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
	p, err := e.setupPage(ctx, 1)
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
