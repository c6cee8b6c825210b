package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/server/store"
)

// tRPC error codes (the keys of @trpc/server's TRPC_ERROR_CODES_BY_KEY)
// that this server answers, with their JSON-RPC number and HTTP status.
const (
	CodeParseError          = "PARSE_ERROR"
	CodeBadRequest          = "BAD_REQUEST"
	CodeUnauthorized        = "UNAUTHORIZED"
	CodeForbidden           = "FORBIDDEN"
	CodeNotFound            = "NOT_FOUND"
	CodeMethodNotSupported  = "METHOD_NOT_SUPPORTED"
	CodeTimeout             = "TIMEOUT"
	CodeConflict            = "CONFLICT"
	CodePayloadTooLarge     = "PAYLOAD_TOO_LARGE"
	CodeUnsupportedMedia    = "UNSUPPORTED_MEDIA_TYPE"
	CodeTooManyRequests     = "TOO_MANY_REQUESTS"
	CodeInternalServerError = "INTERNAL_SERVER_ERROR"
	CodeServiceUnavailable  = "SERVICE_UNAVAILABLE"
)

type codeInfo struct {
	rpc    int // JSON-RPC error number
	status int // HTTP status
}

var codes = map[string]codeInfo{
	CodeParseError:          {-32700, http.StatusBadRequest},
	CodeBadRequest:          {-32600, http.StatusBadRequest},
	CodeUnauthorized:        {-32001, http.StatusUnauthorized},
	CodeForbidden:           {-32003, http.StatusForbidden},
	CodeNotFound:            {-32004, http.StatusNotFound},
	CodeMethodNotSupported:  {-32005, http.StatusMethodNotAllowed},
	CodeTimeout:             {-32008, http.StatusRequestTimeout},
	CodeConflict:            {-32009, http.StatusConflict},
	CodePayloadTooLarge:     {-32013, http.StatusRequestEntityTooLarge},
	CodeUnsupportedMedia:    {-32015, http.StatusUnsupportedMediaType},
	CodeTooManyRequests:     {-32029, http.StatusTooManyRequests},
	CodeInternalServerError: {-32603, http.StatusInternalServerError},
	// tRPC v11 gives every 5xx key the JSON-RPC number -32603; the key and
	// httpStatus tell them apart.
	CodeServiceUnavailable: {-32603, http.StatusServiceUnavailable},
}

// ErrorShape is tRPC's error envelope body (no transformer): the value of
// "error" in an HTTP response or a WebSocket reply.
type ErrorShape struct {
	Message string    `json:"message"`
	Code    int       `json:"code"`
	Data    ErrorData `json:"data"`
}

// ErrorData is tRPC's default error data plus kbkit's fields.
type ErrorData struct {
	Code       string `json:"code"`
	HTTPStatus int    `json:"httpStatus"`
	Path       string `json:"path,omitempty"`
	// Rejection is set on CONFLICT: the command was decided and rejected.
	Rejection *kbcore.Rejection `json:"rejection,omitempty"`
	// Retryable says the call was not decided and may be repeated as is
	// (for kb.command: with the same id).
	Retryable bool `json:"retryable,omitempty"`
}

// callError is a failed call before it is rendered as an ErrorShape.
type callError struct {
	code       string
	message    string
	rejection  *kbcore.Rejection
	retryable  bool
	retryAfter time.Duration
}

func (e *callError) Error() string { return e.code + ": " + e.message }

func errorf(code, format string, args ...any) *callError {
	return &callError{code: code, message: fmt.Sprintf(format, args...)}
}

func (e *callError) status() int { return codes[e.code].status }

func (e *callError) shape(path string) ErrorShape {
	ci := codes[e.code]
	return ErrorShape{
		Message: e.message,
		Code:    ci.rpc,
		Data: ErrorData{
			Code:       e.code,
			HTTPStatus: ci.status,
			Path:       path,
			Rejection:  e.rejection,
			Retryable:  e.retryable,
		},
	}
}

// storeError maps a store failure to the wire. A transient failure is
// SERVICE_UNAVAILABLE (retryable), never a rejection; a page of another
// workspace is NOT_FOUND, so ids of other workspaces' pages do not leak.
func storeError(err error) *callError {
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrForbidden):
		return errorf(CodeNotFound, "page not found")
	case errors.Is(err, store.ErrUnauthorized):
		return errorf(CodeUnauthorized, "unknown device token")
	case errors.Is(err, store.ErrInvalidData):
		// The same input fails the same way every time: the caller's error.
		return errorf(CodeBadRequest, "input: a value was refused by the database (too long or not storable text)")
	case store.IsRetryable(err):
		return &callError{code: CodeServiceUnavailable, message: "transient failure, retry the same call",
			retryable: true, retryAfter: time.Second}
	default:
		return errorf(CodeInternalServerError, "internal error")
	}
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// decodeStrict decodes a procedure input into v: unknown fields, wrong
// types and trailing data are BAD_REQUEST with a message naming the field.
// An absent input decodes as null.
func decodeStrict(raw json.RawMessage, v any) *callError {
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	if err := kbcore.DecodeStrict(raw, v); err != nil {
		if strings.HasPrefix(err.Error(), "trailing data") {
			return errorf(CodeBadRequest, "input: trailing data after the JSON value")
		}
		return inputError(err)
	}
	return nil
}

// inputError words a json decoding error as "<field>: <problem>".
func inputError(err error) *callError {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "input"
		}
		got := te.Value
		if f := strings.Fields(got); len(f) > 0 {
			got = f[0]
		}
		return errorf(CodeBadRequest, "%s: must be %s, got %s", field, jsonTypeName(te.Type.Kind().String()), jsonValueName(got))
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return errorf(CodeBadRequest, "%s: unknown field", strings.Trim(name, `"`))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return errorf(CodeParseError, "input: not valid JSON: %v", err)
	}
	return errorf(CodeBadRequest, "input: %s", strings.TrimPrefix(msg, "json: "))
}

// jsonValueName words the JSON kind of json.UnmarshalTypeError.Value.
func jsonValueName(v string) string {
	switch v {
	case "bool":
		return "a boolean"
	case "array", "object":
		return "an " + v
	case "":
		return "another type"
	default:
		return "a " + v
	}
}

func jsonTypeName(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	case "bool":
		return "a boolean"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64":
		return "a number"
	default:
		return goKind
	}
}
