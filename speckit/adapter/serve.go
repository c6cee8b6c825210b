package adapter

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/subspace/kbkit/internal/version"
	"github.com/subspace/kbkit/speckit/cases"
)

// Server answers adapter requests with an in-process implementation.
type Server struct {
	Impl cases.Impl
	Info Info
}

// Serve answers requests read from r with impl (kbkit's reference, for
// `kbkit adapter`, whose init reply names version.Kit) until r ends or ctx
// is done. Replies are written to w,
// one line each, flushed after every reply.
func Serve(ctx context.Context, r io.Reader, w io.Writer, impl cases.Impl) error {
	info := Info{Implementation: "kbkit", Version: version.Kit,
		Suites: []string{cases.SuiteCommands, cases.SuiteTokenizer, cases.SuiteWindow}}
	if _, ok := impl.(cases.Planner); ok {
		info.Suites = append(info.Suites, cases.SuitePlanner)
	}
	if _, ok := impl.(cases.Canonicalizer); ok {
		info.Suites = append(info.Suites, cases.SuiteCanonical)
	}
	return Server{Impl: impl, Info: info}.Serve(ctx, r, w)
}

// Serve runs the server loop; see the package function Serve.
func (s Server) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	br := bufio.NewReaderSize(r, 1<<16)
	bw := bufio.NewWriter(w)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		line, rerr := br.ReadBytes('\n')
		if line = bytes.TrimSpace(line); len(line) > 0 {
			reply := s.handle(ctx, line)
			if _, err := bw.Write(append(reply, '\n')); err != nil {
				return err
			}
			if err := bw.Flush(); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// handle answers one request line.
func (s Server) handle(ctx context.Context, line []byte) []byte {
	var h header
	if err := json.Unmarshal(line, &h); err != nil {
		return errorReply(nil, CodeMalformed, "malformed request: "+err.Error())
	}
	if h.MsgID == nil {
		return errorReply(nil, CodeMalformed, "the request has no msg_id")
	}
	id := h.MsgID
	var body any
	var err error
	switch h.Type {
	case TypeInit:
		var req initRequest
		if err = json.Unmarshal(line, &req); err != nil {
			break
		}
		if req.Protocol < 1 || req.Protocol > Protocol {
			return errorReply(id, CodeNotSupported, fmt.Sprintf("protocol %d is not supported (this speaks 1 to %d)", req.Protocol, Protocol))
		}
		info := s.Info
		info.Protocol = req.Protocol
		body = info
	case TypeApply:
		var req applyRequest
		if err = json.Unmarshal(line, &req); err != nil {
			break
		}
		if isNull(req.Doc) || isNull(req.Cmd) {
			return errorReply(id, CodeMalformed, "apply needs doc and cmd")
		}
		var r cases.ApplyReply
		if r, err = s.Impl.Apply(ctx, req.Doc, req.Cmd); err == nil {
			body = applyOK(r)
		}
	case TypeTokenize:
		var req cases.TokenizeRequest
		if err = json.Unmarshal(line, &req); err != nil {
			break
		}
		if (req.Text == nil) == (req.Formula == nil) {
			return errorReply(id, CodeMalformed, "tokenize needs exactly one of text and formula")
		}
		body, err = s.Impl.Tokenize(ctx, req)
	case TypeWindow:
		var req cases.WindowRequest
		if err = json.Unmarshal(line, &req); err != nil {
			break
		}
		var states []cases.WindowState
		if states, err = s.Impl.Window(ctx, req); err == nil {
			if states == nil {
				states = []cases.WindowState{}
			}
			body = windowReply{States: &states}
		}
	case TypePlan:
		pl, ok := s.Impl.(cases.Planner)
		if !ok {
			return errorReply(id, CodeNotSupported, "plan is not supported")
		}
		var req cases.PlanRequest
		if err = json.Unmarshal(line, &req); err != nil {
			break
		}
		var r cases.PlanReply
		if r, err = pl.Plan(ctx, req); err == nil {
			body = planOK(r)
		}
	case TypeCanonical:
		var early []byte
		if body, early, err = s.canonical(ctx, id, line); early != nil {
			return early
		}
	case "":
		return errorReply(id, CodeMalformed, "the request has no type")
	default:
		return errorReply(id, CodeNotSupported, fmt.Sprintf("unknown message type %q", h.Type))
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn), errors.As(err, &typ):
		return errorReply(id, CodeMalformed, err.Error())
	case errors.Is(err, cases.ErrNotSupported):
		return errorReply(id, CodeNotSupported, err.Error())
	case err != nil:
		return errorReply(id, CodeCrashed, err.Error())
	}
	out, err := flat(h.Type+"_ok", "in_reply_to", *id, body)
	if err != nil {
		return errorReply(id, CodeCrashed, err.Error())
	}
	return out
}

// canonical answers a canonical request: the body of canonical_ok, or an
// error reply to send as it is (not supported, malformed), or the error
// the implementation returned.
func (s Server) canonical(ctx context.Context, id *int64, line []byte) (any, []byte, error) {
	cz, ok := s.Impl.(cases.Canonicalizer)
	if !ok {
		return nil, errorReply(id, CodeNotSupported, "canonical is not supported"), nil
	}
	var req cases.CanonicalRequest
	if err := json.Unmarshal(line, &req); err != nil {
		return nil, nil, err
	}
	if (req.Doc == nil) == (req.Value == nil) {
		return nil, errorReply(id, CodeMalformed, "canonical needs exactly one of doc and value"), nil
	}
	text, err := cz.Canonical(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	return canonicalReply{Text: &text}, nil, nil
}

func errorReply(id *int64, code int, text string) []byte {
	b, _ := json.Marshal(struct {
		Type      string `json:"type"`
		InReplyTo *int64 `json:"in_reply_to"`
		Code      int    `json:"code"`
		Text      string `json:"text"`
	}{TypeError, id, code, text})
	return b
}

// applyOK is the body of apply_ok: a rejection alone, or doc, inverse and
// index, all three present (an empty inverse is [], not absent).
func applyOK(r cases.ApplyReply) any {
	if r.Rejected != nil {
		return struct {
			Rejected *cases.Rejected `json:"rejected"`
		}{r.Rejected}
	}
	if r.Inverse == nil {
		r.Inverse = []json.RawMessage{}
	}
	return struct {
		Doc     json.RawMessage   `json:"doc"`
		Inverse []json.RawMessage `json:"inverse"`
		Index   json.RawMessage   `json:"index"`
	}{r.Doc, r.Inverse, r.Index}
}

// planOK is the body of plan_ok: a rejection alone, or effects and pages,
// both present.
func planOK(r cases.PlanReply) any {
	if r.Rejected != nil {
		return struct {
			Rejected *cases.Rejected `json:"rejected"`
		}{r.Rejected}
	}
	if r.Effects == nil {
		r.Effects = []cases.PlanEffect{}
	}
	if r.Pages == nil {
		r.Pages = map[string]json.RawMessage{}
	}
	return struct {
		Effects []cases.PlanEffect         `json:"effects"`
		Pages   map[string]json.RawMessage `json:"pages"`
	}{r.Effects, r.Pages}
}
