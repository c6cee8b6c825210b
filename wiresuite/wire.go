package wiresuite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/subspace/kbkit/wire"
)

// Response is one HTTP exchange, kept whole for the diagnostics.
type Response struct {
	Method  string
	URL     string
	ReqBody []byte
	Status  int
	Header  http.Header
	Body    []byte
}

// request is one HTTP request of a check.
type request struct {
	method   string
	path     string // e.g. /trpc/kb.page
	rawQuery string
	body     []byte
	// contentType: "" = application/json for a body; "-" = no header.
	contentType string
	// token: "" = the Env's token; noAuth = no Authorization header.
	token  string
	noAuth bool
	// no429Retry returns a 429 as it is instead of waiting it out.
	no429Retry bool
}

// send does one request. A 429 is waited out (Retry-After, at most 5 s
// each) and the request is sent again: it was refused before anything was
// decided (trust boundary step 4), so a server with a rate limit does not
// fail the checks.
func (e *Env) send(ctx context.Context, rq request) (*Response, error) {
	u := e.BaseURL + rq.path
	if rq.rawQuery != "" {
		u += "?" + rq.rawQuery
	}
	for attempt := 0; ; attempt++ {
		var body io.Reader
		if rq.body != nil {
			body = bytes.NewReader(rq.body)
		}
		req, err := http.NewRequestWithContext(ctx, rq.method, u, body)
		if err != nil {
			return nil, err
		}
		switch {
		case rq.contentType == "-":
		case rq.contentType != "":
			req.Header.Set("Content-Type", rq.contentType)
		case rq.body != nil:
			req.Header.Set("Content-Type", "application/json")
		}
		if !rq.noAuth {
			tok := rq.token
			if tok == "" {
				tok = e.Token
			}
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := e.HTTP.Do(req)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", rq.method, rq.path, err)
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("%s %s: reading the response: %w", rq.method, rq.path, err)
		}
		r := &Response{Method: rq.method, URL: u, ReqBody: rq.body, Status: resp.StatusCode, Header: resp.Header, Body: b}
		if resp.StatusCode == http.StatusTooManyRequests && attempt < 20 && !rq.no429Retry {
			wait := time.Second
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
				wait = min(time.Duration(s)*time.Second, 5*time.Second)
			}
			select {
			case <-time.After(wait):
				continue
			case <-ctx.Done():
				return r, nil
			}
		}
		return r, nil
	}
}

// query is a GET of a procedure with its input (nil: no input; []byte:
// raw JSON; anything else, strings included, is marshalled).
func (e *Env) query(ctx context.Context, path string, input any) (*Response, error) {
	rq := request{method: http.MethodGet, path: "/trpc/" + path}
	if input != nil {
		rq.rawQuery = "input=" + encodeURIComponent(string(rawJSON(input)))
	}
	return e.send(ctx, rq)
}

// mutate is a POST of a procedure with its JSON input.
func (e *Env) mutate(ctx context.Context, path string, input any) (*Response, error) {
	return e.send(ctx, request{method: http.MethodPost, path: "/trpc/" + path, body: rawJSON(input)})
}

func rawJSON(v any) []byte {
	switch v := v.(type) {
	case []byte:
		return v
	case json.RawMessage:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// encodeURIComponent escapes as JavaScript's encodeURIComponent (what
// @trpc/client uses for GET input): spaces are %20, not +.
func encodeURIComponent(s string) string {
	return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// ---- diagnostics ----

func excerpt(b []byte, n int) string {
	s := string(b)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = strings.TrimRight(s, "\n")
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = fmt.Sprintf("%s... (%d bytes in all)", s[:cut], len(b))
	}
	return s
}

func (r *Response) requestText() string {
	if r == nil {
		return ""
	}
	u := r.URL
	if len(u) > 300 {
		u = u[:300] + "..."
	}
	s := r.Method + " " + u
	if r.ReqBody != nil {
		s += "\n" + excerpt(r.ReqBody, 600)
	}
	return s
}

func (r *Response) responseText() string {
	if r == nil {
		return ""
	}
	return fmt.Sprintf("HTTP %d %s\n%s", r.Status, r.Header.Get("Content-Type"), excerpt(r.Body, 1500))
}

// failf is a failure with no exchange attached.
func failf(format string, args ...any) *Failure {
	return &Failure{Message: fmt.Sprintf(format, args...)}
}

// fail is a failure of the exchange r: expected vs got.
func (r *Response) fail(expected, got any, format string, args ...any) *Failure {
	return &Failure{Message: fmt.Sprintf(format, args...), Expected: show(expected), Got: show(got),
		Request: r.requestText(), Response: r.responseText()}
}

func show(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case []byte:
		return string(v)
	case json.RawMessage:
		return string(v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// step prefixes a failure's message with the step of the check it
// happened in.
func step(what string, err error) error {
	if err == nil {
		return nil
	}
	if f, ok := err.(*Failure); ok {
		g := *f
		g.Message = what + ": " + f.Message
		return &g
	}
	if _, ok := err.(skipError); ok {
		return err
	}
	return fmt.Errorf("%s: %w", what, err)
}

// ---- envelopes ----

func (r *Response) mediaType() string {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return mt
}

func (r *Response) checkJSON() *Failure {
	if mt := r.mediaType(); mt != "application/json" {
		return r.fail("Content-Type: application/json", "Content-Type: "+r.Header.Get("Content-Type"),
			"every response is application/json (PROTOCOL.md 3.2)")
	}
	if !json.Valid(r.Body) {
		return r.fail("a JSON body", excerpt(r.Body, 200), "the body is not JSON")
	}
	return nil
}

// expectSuccess checks a 200 {"result":{"data":D}} and returns D.
func expectSuccess(r *Response) (json.RawMessage, error) {
	if r.Status != http.StatusOK {
		return nil, r.fail("HTTP 200", fmt.Sprintf("HTTP %d", r.Status), "the call did not succeed")
	}
	if f := r.checkJSON(); f != nil {
		return nil, f
	}
	return successData(r, r.Body)
}

// successData checks one success envelope {"result":{"data":D}} (also an
// element of a batch answer) and returns D.
func successData(r *Response, body []byte) (json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, r.fail(`{"result":{"data":...}}`, excerpt(body, 200), "the success envelope is not an object")
	}
	if _, ok := top["error"]; ok {
		return nil, r.fail(`{"result":{"data":...}}`, excerpt(body, 300), "a success answer has no error")
	}
	var res map[string]json.RawMessage
	if err := json.Unmarshal(top["result"], &res); err != nil || res == nil {
		return nil, r.fail(`{"result":{"data":...}}`, excerpt(body, 300), "the success envelope has no result object")
	}
	data, ok := res["data"]
	if !ok {
		return nil, r.fail(`{"result":{"data":...}}`, excerpt(body, 300), "result has no data")
	}
	return data, nil
}

// expectError checks a non-batch error answer: the status of code, a
// body {"error": ERROR} with the code's number, data.code and
// data.httpStatus, and data.path when path is set.
func expectError(r *Response, code, path string) (*wire.ErrorShape, error) {
	ci := wire.Codes[code]
	if r.Status != ci.Status {
		return nil, r.fail(fmt.Sprintf("HTTP %d %s", ci.Status, code), fmt.Sprintf("HTTP %d", r.Status), "wrong HTTP status")
	}
	if f := r.checkJSON(); f != nil {
		return nil, f
	}
	return errorObject(r, r.Body, code, path)
}

// errorObject checks one {"error": ERROR} (also an element of a batch).
func errorObject(r *Response, body []byte, code, path string) (*wire.ErrorShape, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, r.fail(`{"error":{...}}`, excerpt(body, 200), "the error answer is not a JSON object")
	}
	if _, ok := top["result"]; ok {
		return nil, r.fail(`{"error":{...}}`, excerpt(body, 300), "an error answer has no result")
	}
	raw, ok := top["error"]
	if !ok {
		return nil, r.fail(`{"error":{...}}`, excerpt(body, 300), "the answer has no error object")
	}
	return checkErrShape(raw, code, path, func(exp, got any, format string, args ...any) *Failure {
		return r.fail(exp, got, format, args...)
	})
}

func checkErrShape(raw json.RawMessage, code, path string, fail func(exp, got any, format string, args ...any) *Failure) (*wire.ErrorShape, error) {
	ci := wire.Codes[code]
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, fail("an object {message, code, data}", excerpt(raw, 200), "error is not an object")
	}
	for _, k := range []string{"message", "code", "data"} {
		if _, ok := fields[k]; !ok {
			return nil, fail("error."+k, "no error."+k, "the error object lacks %q", k)
		}
	}
	var e wire.ErrorShape
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, fail("{message: string, code: number, data: {code: string, httpStatus: number, ...}}", excerpt(raw, 300),
			"the error object has a field of the wrong type: %v", err)
	}
	if e.Message == "" {
		return nil, fail("a non-empty error.message", `""`, "error.message is empty")
	}
	if e.Data.Code != code {
		return nil, fail(code, e.Data.Code, "wrong error.data.code")
	}
	if e.Code != ci.RPC {
		return nil, fail(ci.RPC, e.Code, "wrong error.code (the JSON-RPC number of %s)", code)
	}
	if e.Data.HTTPStatus != ci.Status {
		return nil, fail(ci.Status, e.Data.HTTPStatus, "wrong error.data.httpStatus")
	}
	if path != "" && e.Data.Path != path {
		return nil, fail(path, e.Data.Path, "error.data.path is the procedure of the failed call")
	}
	if code == "CONFLICT" {
		if e.Data.Rejection == nil || e.Data.Rejection.Code == "" {
			return nil, fail("error.data.rejection {code, message}", excerpt(raw, 300), "a CONFLICT carries the rejection")
		}
	}
	return &e, nil
}

// messageNames checks that an error message names a field (PROTOCOL.md
// section 6: "where the input is at fault it starts with the path of the
// faulty field").
func messageNames(r *Response, e *wire.ErrorShape, field string) error {
	if !strings.Contains(e.Message, field) {
		return r.fail("a message naming "+strconv.Quote(field), e.Message, "error.message does not name the faulty field")
	}
	return nil
}

// sameJSON compares two JSON values semantically.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// ---- commands ----

// seqOf checks a committed kb.command answer: 200, {"result":{"data":{"seq":N}}}.
func seqOf(r *Response) (int64, bool, error) {
	data, err := expectSuccess(r)
	if err != nil {
		return 0, false, err
	}
	return seqData(r, data)
}

func seqData(r *Response, data json.RawMessage) (int64, bool, error) {
	var out struct {
		Seq       *int64 `json:"seq"`
		Duplicate *bool  `json:"duplicate"`
	}
	if err := json.Unmarshal(data, &out); err != nil || out.Seq == nil || *out.Seq <= 0 {
		return 0, false, r.fail(`{"seq": N} with N >= 1`, excerpt(data, 200), "kb.command's output is {seq}")
	}
	return *out.Seq, out.Duplicate != nil && *out.Duplicate, nil
}
