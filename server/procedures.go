package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/subspace/kbkit/wire"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/server/store"
	"github.com/subspace/kbkit/spec/schema"
)

// Procedure types, as tRPC names them.
const (
	typeQuery        = "query"
	typeMutation     = "mutation"
	typeSubscription = "subscription"
)

var procedures = map[string]string{
	wire.PathCommand:      typeMutation,
	wire.PathPage:         typeQuery,
	wire.PathOnPage:       typeSubscription,
	wire.PathOnInvalidate: typeSubscription,
	wire.PathWhoami:       typeQuery,
	wire.PathLimits:       typeQuery,
	wire.PathRevoke:       typeMutation,
}

// PageResult is kb.page's output: the document at Seq in canonical JSON
// and the outcomes of the pending ids that were decided (ids never seen
// are absent).
type PageResult = store.Snapshot

// OnInvalidateInput is kb.onInvalidate's input; Topics defaults to every
// topic.
type OnInvalidateInput struct {
	Topics []string `json:"topics,omitempty"`
}

// Invalidation is the payload of one kb.onInvalidate event: something of
// Topic changed, refetch it. PageID and Seq name the command that changed
// it (empty and 0 when the server may have missed changes).
type Invalidation struct {
	Topic  string `json:"topic"`
	PageID string `json:"page_id,omitempty"`
	Seq    int64  `json:"seq,omitempty"`
}

// TopicDirectory is the workspace's directory of live pages: titles,
// aliases, dirs, merges.
const TopicDirectory = "directory"

const maxPending = 1000

// call runs a query or mutation for an authenticated device. The
// subscription procedures are run by the WebSocket handler.
func (s *Server) call(ctx context.Context, dev store.Device, path string, input json.RawMessage) (any, *callError) {
	if err := s.limiter.allow(dev.DeviceID); err != nil {
		if path == wire.PathCommand {
			s.metrics.commands.WithLabelValues("refused").Inc()
		}
		return nil, err
	}
	if cerr := checkWireText(input); cerr != nil {
		if path == wire.PathCommand {
			s.metrics.commands.WithLabelValues("refused").Inc()
		}
		return nil, cerr
	}
	release, cerr := s.admission.admit(ctx)
	if cerr != nil {
		s.metrics.refused.WithLabelValues("overload").Inc()
		return nil, cerr
	}
	defer release()
	if s.opts.DBTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.opts.DBTimeout)
		defer cancel()
	}
	if s.beforeCall != nil {
		s.beforeCall(path)
	}
	switch path {
	case wire.PathLimits:
		var in struct{}
		if cerr := decodeStrict(input, &in); cerr != nil {
			return nil, cerr
		}
		return s.limitsResult(), nil
	case wire.PathRevoke:
		var in struct{}
		if cerr := decodeStrict(input, &in); cerr != nil {
			return nil, cerr
		}
		if _, err := s.st.RevokeDevice(ctx, dev.DeviceID); err != nil {
			return nil, storeError(err)
		}
		s.revoked(dev.DeviceID) // this instance at once; the others by NOTIFY
		return dev, nil
	case wire.PathCommand:
		return s.command(ctx, dev, input)
	case wire.PathPage:
		return s.page(ctx, dev, input)
	case wire.PathWhoami:
		var in struct{}
		if cerr := decodeStrict(input, &in); cerr != nil {
			return nil, cerr
		}
		// The name, so that tools can name workspaces in their messages
		// (spec/PROTOCOL.md 4.3); looked up here, off the auth path.
		name, err := s.st.WorkspaceName(ctx, dev.WorkspaceID)
		if err != nil {
			return nil, storeError(err)
		}
		return struct {
			store.Device
			Workspace string `json:"workspace,omitempty"`
		}{dev, name}, nil
	}
	return nil, errorf(wire.CodeNotFound, "No procedure found on path %q", path)
}

// command is kb.command: validate the envelope at the trust boundary,
// check it is the device's, submit it.
func (s *Server) command(ctx context.Context, dev store.Device, input json.RawMessage) (any, *callError) {
	env, cerr := parseEnvelope(input)
	if cerr == nil && env.DeviceID != dev.DeviceID {
		cerr = errorf(wire.CodeForbidden, "device_id %s is not the authenticated device", env.DeviceID)
	}
	if cerr != nil {
		s.metrics.commands.WithLabelValues("refused").Inc()
		return nil, cerr
	}
	start := time.Now()
	out, err := s.st.Submit(ctx, dev, env)
	s.metrics.submitSeconds.Add(time.Since(start).Seconds())
	if err != nil {
		cerr := storeError(err)
		switch cerr.code {
		case wire.CodeNotFound:
			s.metrics.commands.WithLabelValues("refused").Inc()
		case wire.CodeServiceUnavailable:
			s.metrics.commands.WithLabelValues("retryable").Inc()
			s.log.Warn("kb.command: transient store failure", "id", env.ID, "page_id", env.PageID, "err", err)
		default:
			s.metrics.commands.WithLabelValues("error").Inc()
			s.log.Error("kb.command: store failure", "id", env.ID, "page_id", env.PageID, "err", err)
		}
		return nil, cerr
	}
	s.metrics.commitSeconds.Observe(time.Since(start).Seconds())
	switch {
	case out.Rejected != nil:
		s.metrics.commands.WithLabelValues("rejected").Inc()
		return nil, &callError{code: wire.CodeConflict,
			message:   fmt.Sprintf("command rejected: %s: %s", out.Rejected.Code, out.Rejected.Message),
			rejection: out.Rejected}
	case out.Duplicate:
		s.metrics.commands.WithLabelValues("duplicate").Inc()
	default:
		s.metrics.commands.WithLabelValues("committed").Inc()
	}
	return committedCommand{CommandResult: wire.CommandResult{Seq: out.Seq, Duplicate: out.Duplicate}, page: env.PageID, events: out.PageMemo}, nil
}

// parseEnvelope validates a kb.command input against
// spec/schema/envelope.schema.json (payload included) and decodes it, in
// one pass over the bytes for the common command types
// (schema.ParseEnvelope), invalid JSON being PARSE_ERROR; its
// Parsed carries the decoded payload to the reducer and tells the log its
// bytes are canonical.
func parseEnvelope(input json.RawMessage) (kbcore.Envelope, *callError) {
	if len(input) == 0 {
		return kbcore.Envelope{}, errorf(wire.CodeBadRequest, "input: missing (the command envelope)")
	}
	env, err := schema.ParseEnvelope(input)
	if err != nil {
		// Over HTTP nothing scanned the input before (serveTRPC).
		if cerr := checkJSON(input); cerr != nil {
			return kbcore.Envelope{}, cerr
		}
		if errors.Is(err, schema.ErrInvalid) {
			return kbcore.Envelope{}, errorf(wire.CodeBadRequest, "%v", err)
		}
		return kbcore.Envelope{}, errorf(wire.CodeInternalServerError, "schema: %v", err)
	}
	// The log keeps the payload in canonical JSON (spec/PROTOCOL.md 4.4):
	// an event is then the same bytes whatever the client sent.
	if env.Parsed.Canonical {
		return env, nil
	}
	p, err := kbcore.Canonical(env.Payload)
	if err != nil {
		return kbcore.Envelope{}, errorf(wire.CodeBadRequest, "payload: not canonicalizable JSON (RFC 8785 needs distinct keys): %v", err)
	}
	env.Payload = p
	env.Parsed.Canonical = true // the same value, written canonically
	return env, nil
}

// page is kb.page.
func (s *Server) page(ctx context.Context, dev store.Device, input json.RawMessage) (any, *callError) {
	var in wire.PageInput
	if cerr := decodeStrict(input, &in); cerr != nil {
		return nil, cerr
	}
	if cerr := checkUUID("page_id", in.PageID); cerr != nil {
		return nil, cerr
	}
	if len(in.Pending) > maxPending {
		return nil, errorf(wire.CodeBadRequest, "pending: more than %d ids", maxPending)
	}
	for i, id := range in.Pending {
		if cerr := checkUUID(fmt.Sprintf("pending[%d]", i), id); cerr != nil {
			return nil, cerr
		}
	}
	snap, err := s.st.Page(ctx, dev, in.PageID, in.Pending)
	if err != nil {
		return nil, storeError(err)
	}
	return snap, nil
}

func checkUUID(field, v string) *callError {
	if v == "" {
		return errorf(wire.CodeBadRequest, "%s: missing", field)
	}
	if !uuidRE.MatchString(v) {
		return errorf(wire.CodeBadRequest, "%s: %q is not a lower-case hyphenated uuid", field, v)
	}
	return nil
}

// parseOnPage decodes kb.onPage's input. lastEventId (spec/PROTOCOL.md
// 4.4) may be in the input or in the tRPC message's params (raw: nil
// when absent); the params' wins when both are given. null is absent;
// any other value must be a JSON string of decimal digits.
func parseOnPage(input, paramsLast json.RawMessage) (pageID string, after int64, _ *callError) {
	var in struct {
		PageID      string          `json:"page_id"`
		LastEventID json.RawMessage `json:"lastEventId"`
	}
	if cerr := decodeStrict(input, &in); cerr != nil {
		return "", 0, cerr
	}
	if cerr := checkUUID("page_id", in.PageID); cerr != nil {
		return "", 0, cerr
	}
	last := in.LastEventID
	if p := bytes.TrimSpace(paramsLast); len(p) > 0 && string(p) != "null" {
		last = p
	}
	if last = bytes.TrimSpace(last); len(last) == 0 || string(last) == "null" {
		return in.PageID, 0, nil
	}
	var str string
	if err := json.Unmarshal(last, &str); err != nil {
		return "", 0, errorf(wire.CodeBadRequest, "lastEventId: must be a string (the decimal seq, as in an event's result.id), got %s", jsonKind(last))
	}
	n, err := strconv.ParseInt(str, 10, 64)
	if err != nil || !isDigits(str) {
		return "", 0, errorf(wire.CodeBadRequest, "lastEventId: %q is not a seq (a string of decimal digits)", str)
	}
	return in.PageID, n, nil
}

// isDigits reports whether s is one or more ASCII decimal digits.
func isDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// jsonKind names the JSON type of a valid value.
func jsonKind(v json.RawMessage) string {
	switch v[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func parseOnInvalidate(input json.RawMessage) (map[string]bool, *callError) {
	var in OnInvalidateInput
	if cerr := decodeStrict(input, &in); cerr != nil {
		return nil, cerr
	}
	topics := map[string]bool{}
	for i, t := range in.Topics {
		if t != TopicDirectory {
			return nil, errorf(wire.CodeBadRequest, "topics[%d]: unknown topic %q (known: %s)", i, t, TopicDirectory)
		}
		topics[t] = true
	}
	if len(topics) == 0 {
		topics[TopicDirectory] = true
	}
	return topics, nil
}
