package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/subspace/kbkit/wire"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/server/store"
)

// callError is a failed call before it is rendered as a wire.ErrorShape.
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

func (e *callError) status() int { return wire.Codes[e.code].Status }

func (e *callError) shape(path string) wire.ErrorShape {
	ci := wire.Codes[e.code]
	return wire.ErrorShape{
		Message: e.message,
		Code:    ci.RPC,
		Data: wire.ErrorData{
			Code:       e.code,
			HTTPStatus: ci.Status,
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
		return errorf(wire.CodeNotFound, "page not found")
	case errors.Is(err, store.ErrUnauthorized):
		return errorf(wire.CodeUnauthorized, "unknown device token")
	case errors.Is(err, store.ErrInvalidData):
		// The same input fails the same way every time: the caller's error.
		return errorf(wire.CodeBadRequest, "input: a value was refused by the database (too long or not storable text)")
	case store.IsRetryable(err):
		return &callError{code: wire.CodeServiceUnavailable, message: "transient failure, retry the same call",
			retryable: true, retryAfter: time.Second}
	default:
		return errorf(wire.CodeInternalServerError, "internal error")
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
			return errorf(wire.CodeBadRequest, "input: trailing data after the JSON value")
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
		return errorf(wire.CodeBadRequest, "%s: must be %s, got %s", field, jsonTypeName(te.Type.Kind().String()), jsonValueName(got))
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return errorf(wire.CodeBadRequest, "%s: unknown field", strings.Trim(name, `"`))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return errorf(wire.CodeParseError, "input: not valid JSON: %v", err)
	}
	return errorf(wire.CodeBadRequest, "input: %s", strings.TrimPrefix(msg, "json: "))
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
