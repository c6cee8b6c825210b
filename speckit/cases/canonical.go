package cases

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/subspace/kbkit/kbcore"
)

// SuiteCanonical is the suite of the canonical JSON vectors
// (spec/canonical.json): a case's when has `doc` or `value`, its then
// `canonical`, the exact text of the input's canonical form
// (spec/README.md section 1).
const SuiteCanonical = "canonical"

// CanonicalPrefix starts the id of every case of canonical.json: the
// file's own ids are unique within it, "canonical/<id>" among all cases.
const CanonicalPrefix = SuiteCanonical + "/"

// CanonicalRequest asks for the canonical form of exactly one of a
// document (Doc) and any JSON value (Value), each one JSON value on one
// line, as written in the case (escapes, key order and number spellings
// are part of the input).
type CanonicalRequest struct {
	Doc   json.RawMessage `json:"doc,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
}

// Canonicalizer is implemented by implementations that run the canonical
// suite; the others skip it.
type Canonicalizer interface {
	Canonical(ctx context.Context, req CanonicalRequest) (string, error)
}

// Canonical is kbcore's canonical writer: a document through
// Doc.MarshalJSON; a value of a logged command's shape (exactly id and
// type, strings, and payload, an object) as the server writes its events'
// commands (kbcore.AppendCommand); any other value through
// kbcore.Canonical. Each is the writer kbkit's server puts on the wire.
func (Reference) Canonical(_ context.Context, req CanonicalRequest) (string, error) {
	switch {
	case req.Doc != nil && req.Value == nil:
		d, err := kbcore.ParseDoc(req.Doc)
		if err != nil {
			return "", err
		}
		b, err := d.MarshalJSON()
		return string(b), err
	case req.Value != nil && req.Doc == nil:
		b, err := kbcore.Canonical(req.Value)
		if err != nil {
			return "", err
		}
		if c, ok := loggedCommand(b); ok {
			return string(kbcore.AppendCommand(nil, c)), nil
		}
		return string(b), nil
	}
	return "", fmt.Errorf("canonical: needs exactly one of doc and value")
}

// loggedCommand reads a canonical value of a logged command's shape.
func loggedCommand(b []byte) (kbcore.Command, bool) {
	var m map[string]json.RawMessage
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &m) != nil || len(m) != 3 {
		return kbcore.Command{}, false
	}
	var c kbcore.Command
	if json.Unmarshal(m["id"], &c.ID) != nil || json.Unmarshal(m["type"], &c.Type) != nil {
		return kbcore.Command{}, false
	}
	p := m["payload"]
	if len(p) == 0 || p[0] != '{' || m["id"] == nil || m["type"] == nil {
		return kbcore.Command{}, false
	}
	c.Payload = p
	return c, true
}

// canonicalInput is a canonical case's request and expected text.
func canonicalInput(c Case) (CanonicalRequest, string, error) {
	var req CanonicalRequest
	doc, hasDoc := c.When["doc"]
	value, hasValue := c.When["value"]
	if hasDoc == hasValue {
		return req, "", fmt.Errorf("%w: when needs exactly one of doc and value", ErrFormat)
	}
	raw := func(v any) (json.RawMessage, error) {
		if r, ok := v.(json.RawMessage); ok {
			return r, nil
		}
		return json.Marshal(v)
	}
	var err error
	if hasDoc {
		req.Doc, err = raw(doc)
	} else {
		req.Value, err = raw(value)
	}
	if err != nil {
		return req, "", fmt.Errorf("%w: %v", ErrFormat, err)
	}
	want, ok := c.Then["canonical"].(string)
	if !ok || want == "" {
		return req, "", fmt.Errorf("%w: then.canonical must be a non-empty string", ErrFormat)
	}
	return req, want, nil
}

// checkCanonical compares the implementation's canonical text with the
// case's byte for byte; the diff says at which byte they part and the
// rule of RFC 8785 the difference breaks (kbcore.CanonicalMismatch).
func checkCanonical(ctx context.Context, impl Impl, c Case) (string, error) {
	req, want, err := canonicalInput(c)
	if err != nil {
		return "", err
	}
	cz, ok := impl.(Canonicalizer)
	if !ok {
		return "", fmt.Errorf("%w: suite %s", ErrNotSupported, SuiteCanonical)
	}
	got, err := cz.Canonical(ctx, req)
	if err != nil {
		return "", err
	}
	if got == want {
		return "", nil
	}
	return "canonical:\n  " + kbcore.CanonicalMismatch([]byte(got), []byte(want)) + "\n" +
		"- " + strconv.Quote(want) + "\n+ " + strconv.Quote(got) + "\n", nil
}

// ParseCanonical reads a file of canonical JSON vectors (the format of
// spec/canonical.json: spec_version, cases of id, doc or value, and
// canonical) into cases of suite canonical, ids prefixed "canonical/",
// each input compacted to one line with its bytes otherwise as written.
func ParseCanonical(name string, data []byte) (File, error) {
	var head struct {
		SpecVersion int `json:"spec_version"`
		Cases       []struct {
			ID        string          `json:"id"`
			Doc       json.RawMessage `json:"doc"`
			Value     json.RawMessage `json:"value"`
			Canonical *string         `json:"canonical"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return File{}, fmt.Errorf("%w: %s: %v", ErrFormat, name, err)
	}
	if err := checkSpecVersion(head.SpecVersion); err != nil {
		return File{}, fmt.Errorf("%w: %s: %v", ErrFormat, name, err)
	}
	f := File{Path: name}
	for i, k := range head.Cases {
		where := fmt.Sprintf("%s: cases[%d]", name, i)
		if k.ID == "" || strings.Contains(k.ID, "/") {
			return File{}, fmt.Errorf("%w: %s: an id is a non-empty name without '/'", ErrFormat, where)
		}
		c := Case{ID: CanonicalPrefix + k.ID, File: name, Line: lineOf(data, `"id": "`+k.ID+`"`),
			When: map[string]any{}, Then: map[string]any{}}
		for key, v := range map[string]json.RawMessage{"doc": k.Doc, "value": k.Value} {
			if v == nil {
				continue
			}
			var b bytes.Buffer
			if err := json.Compact(&b, v); err != nil {
				return File{}, fmt.Errorf("%w: %s: %s: %v", ErrFormat, where, key, err)
			}
			c.When[key] = json.RawMessage(b.Bytes())
		}
		if len(c.When) != 1 || k.Canonical == nil || *k.Canonical == "" {
			return File{}, fmt.Errorf("%w: %s (%s): needs exactly one of doc and value, and a non-empty canonical", ErrFormat, where, k.ID)
		}
		c.Then["canonical"] = *k.Canonical
		f.Cases = append(f.Cases, c)
	}
	return f, nil
}

// lineOf is the line (from 1) of the first occurrence of s in data, 0 if
// none.
func lineOf(data []byte, s string) int {
	i := bytes.Index(data, []byte(s))
	if i < 0 {
		return 0
	}
	return bytes.Count(data[:i], []byte("\n")) + 1
}
