package kbcore

import (
	"encoding/json"
	"errors"
	"reflect"
)

// ReadCommand reads a command object {id, type, payload} as spec/ADAPTER.md
// section 3 says: a `type` that is not a string is kept as its JSON text
// (so it is no command type: unknown-type), and an `id` that is not a
// string (nor null) is reported in unshaped, to be answered by
// RejectUnshaped or PlanUnshaped. err is set only when b is not a JSON
// object; unknown fields are ignored and the payload is kept as written.
func ReadCommand(b []byte) (c Command, unshaped string, err error) {
	var raw struct {
		ID      json.RawMessage `json:"id"`
		Type    json.RawMessage `json:"type"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) { // name the command, not this decoder's struct
			return c, "", &json.UnmarshalTypeError{Value: typ.Value, Type: reflect.TypeOf(c), Offset: typ.Offset}
		}
		return c, "", err
	}
	if raw.Type != nil && json.Unmarshal(raw.Type, &c.Type) != nil {
		c.Type = string(raw.Type)
	}
	if raw.ID != nil && json.Unmarshal(raw.ID, &c.ID) != nil {
		unshaped = "the command's id is not a string: " + string(raw.ID)
	}
	c.Payload = raw.Payload
	return c, unshaped, nil
}

// RejectUnshaped is Apply's answer to a command ReadCommand found without
// its shape: the common checks that read only the type and the page
// (Precheck) first, then invalid-payload (spec/README.md 2.1).
func RejectUnshaped(d Doc, typ, why string) *Rejection {
	if rej := Precheck(d, typ); rej != nil {
		return rej
	}
	return reject(CodeInvalidPayload, "%s", why)
}

// PlanUnshaped is PlanCommand's answer to such a command: it skips the
// planner's checks (spec/planner.md 1), so the envelope page's
// page-not-found comes first, then RejectUnshaped on that page.
func PlanUnshaped(docs []Doc, page, typ, why string) *Rejection {
	for _, d := range docs {
		if d.Page().ID == page {
			return RejectUnshaped(d, typ, why)
		}
	}
	if typ != TypeCreatePage {
		return reject(CodePageNotFound, "page %q does not exist", page)
	}
	d, _ := NewDoc(Page{ID: page}, nil)
	return RejectUnshaped(d, typ, why)
}
