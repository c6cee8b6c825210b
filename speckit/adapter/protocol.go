package adapter

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/subspace/kbkit/speckit/cases"
)

// Protocol is the newest protocol version this package speaks
// (`init.protocol`); it speaks every version from 1 (Protocols). Version 2
// adds the client suite (client_suite.go) to version 1, whose messages it
// keeps: an adapter of version 1 runs the suites of cases under a runner
// of version 2 (the handshake settles on 1).
const Protocol = 2

// ProtocolClient is the first protocol version with the client suite.
const ProtocolClient = 2

// ProtocolCanonical is the first protocol version with the canonical
// suite (an optional suite added to version 2, spec/ADAPTER.md 3).
const ProtocolCanonical = 2

// Protocols lists the versions the runner offers in init, oldest first.
func Protocols() []int {
	out := make([]int, Protocol)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

// Message types. Every reply to a request of type T is `T_ok` or `error`.
const (
	TypeInit      = "init"
	TypeApply     = "apply"
	TypeTokenize  = "tokenize"
	TypeWindow    = "window"
	TypePlan      = "plan"
	TypeCanonical = "canonical"
	TypeError     = "error"
)

// Error codes of an `error` reply. They follow Maelstrom's numbering.
const (
	// CodeNotSupported: the adapter does not implement this message or
	// command; the case is skipped.
	CodeNotSupported = 10
	// CodeMalformed: the request could not be read.
	CodeMalformed = 12
	// CodeCrashed: the implementation failed on a well-formed request.
	CodeCrashed = 13
)

// Suites an adapter may list in init_ok: those of cases, and the client
// suite (section 7).
var Suites = append(slices.Clone(cases.Suites), SuiteClient)

// Info is the body of init_ok: who the adapter is and what it implements.
type Info struct {
	Implementation string   `json:"implementation"`
	Version        string   `json:"version"`
	Suites         []string `json:"suites"`
	// Commands optionally lists the command types the adapter applies;
	// command cases of other types are skipped without a request. Absent
	// means every type.
	Commands []string `json:"commands,omitempty"`
	// Intents lists the user intents a client adapter performs (suite
	// client); the simulator draws no other.
	Intents []string `json:"intents,omitempty"`
	// Protocol is the protocol version of the session: the one init_ok
	// names, else the one init proposed (the runner fills it in).
	Protocol int `json:"protocol,omitempty"`
}

// Supports reports whether the adapter listed suite in init_ok.
func (i Info) Supports(suite string) bool {
	for _, s := range i.Suites {
		if s == suite {
			return true
		}
	}
	return false
}

// SupportsCommand reports whether the adapter applies commands of type typ.
func (i Info) SupportsCommand(typ string) bool {
	if i.Commands == nil {
		return true
	}
	for _, s := range i.Commands {
		if s == typ {
			return true
		}
	}
	return false
}

// Request bodies (without type and msg_id).
type (
	initRequest struct {
		// Protocol is the version proposed: the newest of Protocols not
		// yet refused.
		Protocol int `json:"protocol"`
		// Protocols are every version the runner speaks; an adapter that
		// reads it names the one it takes in init_ok.
		Protocols []int `json:"protocols,omitempty"`
	}
	applyRequest struct {
		Doc json.RawMessage `json:"doc"`
		Cmd json.RawMessage `json:"cmd"`
	}
	windowReply struct {
		States *[]cases.WindowState `json:"states"`
	}
	canonicalReply struct {
		Text *string `json:"text"`
	}
)

// rawBody is a message body already encoded as one JSON object on one
// line: flat takes its bytes as they are (a canonical request's input is
// sent as the case writes it, with no escaping of <, > and & added).
type rawBody []byte

// header is what every line must have: a type, and for requests a msg_id,
// for replies an in_reply_to.
type header struct {
	Type      string `json:"type"`
	MsgID     *int64 `json:"msg_id"`
	InReplyTo *int64 `json:"in_reply_to"`
	Code      *int   `json:"code"`
	Text      string `json:"text"`
}

// RemoteError is an `error` reply.
type RemoteError struct {
	Type string // the request's type
	Code int
	Text string
}

func (e *RemoteError) Error() string {
	name := ""
	switch e.Code {
	case CodeNotSupported:
		name = " (not supported)"
	case CodeMalformed:
		name = " (malformed request)"
	case CodeCrashed:
		name = " (crashed)"
	}
	return fmt.Sprintf("adapter: %s: error %d%s: %s", e.Type, e.Code, name, e.Text)
}

// Unwrap makes code 10 match cases.ErrNotSupported, so the case is skipped.
func (e *RemoteError) Unwrap() error {
	if e.Code == CodeNotSupported {
		return cases.ErrNotSupported
	}
	return nil
}

// Errors of the transport. Each one kills the adapter process; the next
// request starts a new one. The case that saw the error is errored.
var (
	// ErrProtocol: the adapter wrote something that is not a valid reply.
	ErrProtocol = errors.New("adapter: protocol error")
	// ErrTimeout: no reply within the per-request timeout.
	ErrTimeout = errors.New("adapter: timeout")
	// ErrExited: the adapter closed its stdout or exited.
	ErrExited = errors.New("adapter: process exited")
	// ErrGaveUp: the adapter failed too many times in a row; it is no
	// longer restarted.
	ErrGaveUp = errors.New("adapter: gave up restarting")
)

// flat encodes body (a struct or map encoding to a JSON object) with type
// and idKey: id prepended, as one line without the newline.
func flat(typ, idKey string, id int64, body any) ([]byte, error) {
	head, _ := json.Marshal(typ)
	out := make([]byte, 0, 64)
	out = append(out, `{"type":`...)
	out = append(out, head...)
	out = append(out, fmt.Sprintf(`,%q:%d`, idKey, id)...)
	if body == nil {
		return append(out, '}'), nil
	}
	b, ok := body.(rawBody)
	if !ok {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return nil, err
		}
	}
	if len(b) < 2 || b[0] != '{' {
		return nil, fmt.Errorf("adapter: message body is not an object: %s", b)
	}
	if len(b) > 2 {
		out = append(out, ',')
		out = append(out, b[1:len(b)-1]...)
	}
	return append(out, '}'), nil
}
