package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/subspace/kbkit/wire"
)

// successEnvelope is tRPC's success response: {"result":{"data":...}}.
type successEnvelope struct {
	Result struct {
		Data any `json:"data"`
	} `json:"result"`
}

// errorEnvelope is tRPC's error response: {"error":{message, code, data}}.
type errorEnvelope struct {
	Error wire.ErrorShape `json:"error"`
}

// callResult is one call's answer before it is written.
type callResult struct {
	data any
	err  *callError
	path string
}

func (c callResult) envelope() any {
	if c.err != nil {
		return errorEnvelope{Error: c.err.shape(c.path)}
	}
	var e successEnvelope
	e.Result.Data = c.data
	return e
}

func (c callResult) status() int {
	if c.err != nil {
		return c.err.status()
	}
	return http.StatusOK
}

// serveTRPC serves /trpc/<path>[,<path>...] as tRPC's HTTP adapter does,
// and upgrades /trpc to a WebSocket.
func (s *Server) serveTRPC(w http.ResponseWriter, r *http.Request) {
	entered := time.Now()
	rest, _ := strings.CutPrefix(r.URL.Path, "/trpc")
	rest = strings.TrimPrefix(rest, "/")
	if rest == "" {
		if isWebSocketUpgrade(r) {
			s.serveWS(w, r)
			return
		}
		s.writeOne(w, callResult{err: errorf(wire.CodeNotFound, "No procedure path given: use /trpc/<procedure>, or a WebSocket on /trpc")})
		return
	}
	if t := s.opts.Limits.BodyTimeout; t > 0 {
		// The body (and a body left unread after an early answer) must
		// arrive within the limit; the headers are bounded by the
		// http.Server's ReadHeaderTimeout (HTTPServer).
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(t))
	}
	if r.Method == http.MethodHead { // tRPC answers HEAD (lambda warm-up) with 204
		w.WriteHeader(http.StatusNoContent)
		return
	}
	batch := r.URL.Query().Get("batch") == "1"
	paths := []string{rest}
	if batch {
		paths = strings.Split(rest, ",")
	}
	path0 := ""
	if len(paths) == 1 {
		path0 = paths[0]
	}

	// Request-level checks answer one error object, as tRPC does, even for
	// a batch (httpBatchLink then fails every call with it).
	token, _ := bearer(r)
	dev, cerr := s.authenticate(r.Context(), remoteHost(r), token)
	if cerr == nil && batch && s.opts.Limits.MaxBatch > 0 && len(paths) > s.opts.Limits.MaxBatch {
		s.metrics.refused.WithLabelValues("batch").Inc()
		cerr = errorf(wire.CodePayloadTooLarge, "a batch of %d calls: at most %d calls per batch", len(paths), s.opts.Limits.MaxBatch)
	}
	if cerr != nil {
		if r.ContentLength != 0 {
			// Answer at once and close: reading the unread body first (to
			// keep the connection) would let a client without a token hold
			// it until the body timeout.
			w.Header().Set("Connection", "close")
		}
		s.count(path0, cerr)
		s.writeOne(w, callResult{err: cerr, path: path0})
		return
	}
	// kb.command's own parser (parseEnvelope) reads its input in one
	// pass and tells invalid JSON itself: the body is not scanned first.
	scanned := batch || r.Method != http.MethodPost || path0 != wire.PathCommand
	inputs, cerr := s.readInputs(w, r, batch, len(paths), scanned)
	if cerr != nil {
		s.count(path0, cerr)
		s.writeOne(w, callResult{err: cerr, path: path0})
		return
	}

	// Calls of a batch run in order, so that a window's commands batched
	// by httpBatchLink keep their order.
	results := make([]callResult, len(paths))
	for i, p := range paths {
		start := time.Now()
		res := callResult{path: p}
		typ, ok := procedures[p]
		switch {
		case !ok:
			res.err = errorf(wire.CodeNotFound, "No procedure found on path %q", p)
		case typ == typeSubscription:
			res.err = errorf(wire.CodeMethodNotSupported, "%s is a subscription: subscribe on the WebSocket at /trpc", p)
		case typ == typeQuery && r.Method != http.MethodGet, typ == typeMutation && r.Method != http.MethodPost:
			res.err = errorf(wire.CodeMethodNotSupported, "Unsupported %s-request to %s procedure at path %q", r.Method, typ, p)
		default:
			res.data, res.err = s.safeCall(r.Context(), dev, p, inputs[i])
		}
		s.count(p, res.err)
		s.logCall(r.Context(), "http", p, dev.DeviceID, res.err, time.Since(start))
		results[i] = res
	}
	if !batch {
		s.writeOne(w, results[0])
		if path0 == wire.PathCommand {
			s.metrics.commandSeconds.WithLabelValues("http").Add(time.Since(entered).Seconds())
		}
		return
	}
	status := 0
	body := make([]any, len(results))
	for i, res := range results {
		body[i] = res.envelope()
		switch {
		case status == 0:
			status = res.status()
		case status != res.status():
			status = http.StatusMultiStatus
		}
		setRetryAfter(w, res.err)
	}
	writeJSON(w, status, body)
}

// readInputs reads the raw input of each call: GET ?input=, POST body;
// a batch's input is an object keyed by call index ("0", "1", ...). An
// absent input is nil.
//
// scan false leaves a single call's input unchecked for JSON syntax: its
// procedure answers PARSE_ERROR for invalid JSON itself.
func (s *Server) readInputs(w http.ResponseWriter, r *http.Request, batch bool, n int, scan bool) ([]json.RawMessage, *callError) {
	var raw []byte
	switch r.Method {
	case http.MethodGet:
		q := r.URL.Query()
		if q.Has("input") {
			raw = []byte(q.Get("input"))
			if int64(len(raw)) > s.opts.MaxBody {
				return nil, errorf(wire.CodePayloadTooLarge, "input is larger than %d bytes", s.opts.MaxBody)
			}
		}
	case http.MethodPost:
		if ct := r.Header.Get("Content-Type"); ct != "" {
			mt, _, err := mime.ParseMediaType(ct)
			if err == nil && (strings.HasPrefix(mt, "multipart/") || mt == "application/octet-stream") {
				return nil, errorf(wire.CodeUnsupportedMedia, "unsupported content type %q: send application/json", mt)
			}
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBody))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, errorf(wire.CodePayloadTooLarge, "request body is larger than %d bytes", s.opts.MaxBody)
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				s.metrics.refused.WithLabelValues("body_timeout").Inc()
				w.Header().Set("Connection", "close")
				return nil, errorf(wire.CodeTimeout, "the request body did not arrive within %s", s.opts.Limits.BodyTimeout)
			}
			return nil, errorf(wire.CodeBadRequest, "reading the request body: %v", err)
		}
		// Read: the handler may take its time (a background read must not
		// time out and cancel the request).
		_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
		if len(body) > 0 {
			raw = body
		}
	default:
		return nil, errorf(wire.CodeMethodNotSupported, "Unsupported %s-request: queries are GET, mutations POST", r.Method)
	}
	inputs := make([]json.RawMessage, n)
	if raw == nil {
		return inputs, nil
	}
	if scan || batch {
		if cerr := checkJSON(raw); cerr != nil {
			return nil, cerr
		}
	}
	if !batch {
		inputs[0] = raw
		return inputs, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, errorf(wire.CodeBadRequest, `"input" needs to be an object when doing a batch call`)
	}
	for k := range m {
		i, err := strconv.Atoi(k)
		if err != nil || i < 0 || i >= n || strconv.Itoa(i) != k {
			return nil, errorf(wire.CodeBadRequest, "input: key %q is not the index of a call of this batch", k)
		}
	}
	for i := range inputs {
		inputs[i] = m[strconv.Itoa(i)]
	}
	return inputs, nil
}

// checkJSON is PARSE_ERROR for input that is not valid JSON.
func checkJSON(raw []byte) *callError {
	if !json.Valid(raw) {
		return errorf(wire.CodeParseError, "input is not valid JSON: %s", jsonSyntaxError(raw))
	}
	return nil
}

func jsonSyntaxError(raw []byte) string {
	var v any
	err := json.Unmarshal(raw, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return se.Error() + " at byte " + strconv.FormatInt(se.Offset, 10)
	}
	if err != nil {
		return err.Error()
	}
	return "invalid JSON"
}

func (s *Server) writeOne(w http.ResponseWriter, res callResult) {
	setRetryAfter(w, res.err)
	writeJSON(w, res.status(), res.envelope())
}

func setRetryAfter(w http.ResponseWriter, err *callError) {
	if err == nil || err.retryAfter <= 0 {
		return
	}
	secs := int((err.retryAfter + time.Second - 1) / time.Second)
	w.Header().Set("Retry-After", strconv.Itoa(max(1, secs)))
}

// The values of the headers every answer carries, shared (net/http does
// not modify them).
var (
	headerJSON = []string{"application/json"}
	headerVary = []string{"trpc-accept"}
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	var b []byte
	if e, ok := v.(successEnvelope); ok {
		if r, ok := e.Result.Data.(committedCommand); ok {
			// kb.command's answer, the one on the hot path: byte for byte
			// what json.Marshal writes (TestCommandAnswerEncoding).
			b = appendCommandAnswer(make([]byte, 0, 64), r.CommandResult)
		}
	}
	if b == nil {
		var err error
		if b, err = marshalWire(v); err != nil {
			status = http.StatusInternalServerError
			b, _ = marshalWire(errorEnvelope{Error: errorf(wire.CodeInternalServerError, "encoding the response: %v", err).shape("")})
		}
		b = append(b, '\n')
	}
	h := w.Header()
	h["Content-Type"] = headerJSON
	h["Vary"] = headerVary
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// marshalWire is json.Marshal without its HTML escaping: the canonical
// documents and commands inside an answer (spec/README.md section 1) keep
// their bytes, '<', '>', '&' and U+2028/9 as themselves.
func marshalWire(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// appendCommandAnswer appends {"result":{"data":{"seq":N[,"duplicate":true]}}}
// and a newline.
func appendCommandAnswer(b []byte, r wire.CommandResult) []byte {
	b = appendCommandData(append(b, `{"result":{"data":`...), r)
	return append(b, "}}\n"...)
}

// appendCommandData appends kb.command's data, {"seq":N[,"duplicate":true]},
// as json.Marshal writes it.
func appendCommandData(b []byte, r wire.CommandResult) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, r.Seq, 10)
	if r.Duplicate {
		b = append(b, `,"duplicate":true`...)
	}
	return append(b, '}')
}

func isWebSocketUpgrade(r *http.Request) bool {
	return headerHasToken(r.Header, "Connection", "upgrade") && headerHasToken(r.Header, "Upgrade", "websocket")
}

func headerHasToken(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// count records a call in the calls metric.
func (s *Server) count(path string, err *callError) {
	if _, ok := procedures[path]; !ok {
		path = "unknown"
	}
	code := "OK"
	if err != nil {
		code = err.code
	}
	s.metrics.calls.WithLabelValues(path, code).Inc()
}
