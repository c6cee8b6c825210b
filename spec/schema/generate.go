package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"strings"

	"github.com/subspace/kbkit/kbcore"
)

// The lists of command types the spec's JSON Schemas and TypeScript types
// need are derived from the command registry (kbcore/registry.go): `go
// generate ./spec/schema` rewrites them in place (cmd/gen), and
// TestGeneratedUpToDate fails while a file differs from what Generate
// makes of it (docs/adding-a-command.md).
//
//go:generate go run ./gen ..

// Generated files, relative to spec/.
const (
	genCommon  = "schema/" + CommonSchema
	genAdapter = "schema/adapter/defs.schema.json"
	genTypes   = "types/kbkit.d.ts"
)

// Generate returns the files of fsys (spec/) whose registry-derived parts
// differ from what the registry makes of them, with those parts rewritten:
// the type enum and the payload branches of common.schema.json, the
// adapter's intent enum, and the Payloads interface of kbkit.d.ts (from
// the payload schemas).
func Generate(fsys fs.FS) (map[string][]byte, error) {
	out := map[string][]byte{}
	put := func(name string, edit func([]byte) ([]byte, error)) error {
		old, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		b, err := edit(old)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if !bytes.Equal(b, old) {
			out[name] = b
		}
		return nil
	}
	if err := put(genCommon, genCommonDefs); err != nil {
		return nil, err
	}
	if err := put(genAdapter, genIntents); err != nil {
		return nil, err
	}
	if err := put(genTypes, func(b []byte) ([]byte, error) { return genPayloadTypes(fsys, b) }); err != nil {
		return nil, err
	}
	return out, nil
}

// splice replaces what lies between the line starting with from and the
// next line equal to to (both kept).
func splice(b []byte, from, to, body string) ([]byte, error) {
	s := string(b)
	i := strings.Index(s, "\n"+from)
	if i < 0 {
		return nil, fmt.Errorf("no line %q", from)
	}
	i = strings.IndexByte(s[i+1:], '\n') + i + 1 // the end of from's line
	j := strings.Index(s[i:], "\n"+to+"\n")
	if j < 0 {
		return nil, fmt.Errorf("no line %q after %q", to, from)
	}
	return []byte(s[:i+1] + body + s[i+j:]), nil
}

func quoted(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func genCommonDefs(b []byte) ([]byte, error) {
	comma := func(i int) string { return map[bool]string{true: ",", false: ""}[i < len(kbcore.Types)-1] }
	var w strings.Builder
	w.WriteString("      \"description\": \"One of the command types, in spec order (generated from kbcore/registry.go by go generate ./spec/schema).\",\n")
	w.WriteString("      \"enum\": [\n")
	for i, t := range kbcore.Types {
		fmt.Fprintf(&w, "        %s%s\n", quoted(t), comma(i))
	}
	w.WriteString("      ]")
	b, err := splice(b, `    "commandType": {`, "    },", w.String())
	if err != nil {
		return nil, err
	}
	const head = `    "payloadByType": {`
	if !bytes.Contains(b, []byte("\n"+head+"\n")) {
		// First generation: the definition follows commandType.
		at := bytes.Index(b, []byte("\n    \"commandType\": {"))
		at += bytes.Index(b[at:], []byte("\n    },\n")) + len("\n    },\n")
		b = append(b[:at:at], append([]byte(head+"\n    },\n"), b[at:]...)...)
	}
	w.Reset()
	w.WriteString("      \"description\": \"A command's payload checked against its type's schema, payload/<type>.schema.json, on an object with `type` and `payload` (the envelope, the case files' inverse commands): one branch per command type (generated from kbcore/registry.go by go generate ./spec/schema).\",\n")
	w.WriteString("      \"allOf\": [\n")
	for i, t := range kbcore.Types {
		fmt.Fprintf(&w, `        {"if": {"properties": {"type": {"const": %s}}, "required": ["type"]}, "then": {"properties": {"payload": {"$ref": %s}}}}%s`+"\n",
			quoted(t), quoted(PayloadSchema(t)), comma(i))
	}
	w.WriteString("      ]")
	return splice(b, head, "    },", w.String())
}

func genIntents(b []byte) ([]byte, error) {
	intents := append(kbcore.TypesWhere(func(ti kbcore.TypeInfo) bool { return ti.Intent }), "undo", "redo")
	s := string(b)
	i := strings.Index(s, "\n    \"intent\": {\n")
	if i < 0 {
		return nil, fmt.Errorf(`no "intent" definition`)
	}
	j := strings.Index(s[i:], "\n      \"enum\": [")
	if j < 0 {
		return nil, fmt.Errorf(`the "intent" definition has no enum line`)
	}
	j += i + 1
	k := strings.IndexByte(s[j:], '\n') + j
	q := make([]string, len(intents))
	for i, in := range intents {
		q[i] = quoted(in)
	}
	return []byte(s[:j] + "      \"enum\": [" + strings.Join(q, ", ") + "]" + s[k:]), nil
}

// genPayloadTypes writes the members of kbkit.d.ts's Payloads interface
// from the payload schemas: a field per property, in the schema's order,
// optional unless required.
func genPayloadTypes(fsys fs.FS, b []byte) ([]byte, error) {
	var w strings.Builder
	for _, t := range kbcore.Types {
		raw, err := fs.ReadFile(fsys, "schema/"+PayloadSchema(t))
		if err != nil {
			return nil, err
		}
		var sch struct {
			Required   []string                   `json:"required"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(raw, &sch); err != nil {
			return nil, fmt.Errorf("%s: %w", PayloadSchema(t), err)
		}
		order, err := propertyOrder(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", PayloadSchema(t), err)
		}
		var fields []string
		for _, name := range order {
			ts, err := tsType(sch.Properties[name])
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", PayloadSchema(t), name, err)
			}
			opt := "?"
			for _, r := range sch.Required {
				if r == name {
					opt = ""
				}
			}
			fields = append(fields, name+opt+": "+ts)
		}
		key := t
		if strings.Contains(t, "-") {
			key = quoted(t)
		}
		fmt.Fprintf(&w, "  %s: { %s };\n", key, strings.Join(fields, "; "))
	}
	return splice(b, "export interface Payloads {", "}", strings.TrimSuffix(w.String(), "\n"))
}

// propertyOrder lists the keys of the top-level "properties" object in
// the order the file writes them.
func propertyOrder(raw []byte) ([]string, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(top["properties"]))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("properties is not an object")
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// tsNames are the TypeScript names kbkit.d.ts gives the schemas'
// definitions, by $ref fragment name.
var tsNames = map[string]string{
	"nodeId": "NodeID", "nodeRef": "NodeID", "nullableNodeId": "NodeID | null", "nullableNodeRef": "NodeID | null",
	"uuid": "UUID", "cellName": "CellName", "rankHint": "string | null", "record": "NodeRecord", "output": "Output",
	"outputs": "Output[]", "title": "string", "alias": "string", "aliases": "string[]", "dir": "string | null",
}

// tsType is the TypeScript type of a property's schema; an error for a
// shape it does not know (name it in tsNames).
func tsType(raw json.RawMessage) (string, error) {
	var s struct {
		Ref   string          `json:"$ref"`
		Type  any             `json:"type"`
		Enum  []any           `json:"enum"`
		Items json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", err
	}
	if s.Ref != "" {
		_, name, _ := strings.Cut(s.Ref, "#/$defs/")
		if ts, ok := tsNames[name]; ok {
			return ts, nil
		}
		return "", fmt.Errorf("$ref %s has no TypeScript name (spec/schema/generate.go tsNames)", s.Ref)
	}
	if s.Enum != nil {
		var alts []string
		for _, v := range s.Enum {
			alts = append(alts, quoted(v))
		}
		return strings.Join(alts, " | "), nil
	}
	var types []string
	switch v := s.Type.(type) {
	case string:
		types = []string{v}
	case []any:
		for _, x := range v {
			t, _ := x.(string)
			types = append(types, t)
		}
	default:
		return "", fmt.Errorf("no type, $ref or enum")
	}
	var alts []string
	for _, t := range types {
		switch t {
		case "string", "number", "boolean", "null":
			alts = append(alts, t)
		case "integer":
			alts = append(alts, "number")
		case "array":
			el, err := tsType(s.Items)
			if err != nil {
				return "", err
			}
			if strings.Contains(el, "|") {
				el = "(" + el + ")"
			}
			alts = append(alts, el+"[]")
		default:
			return "", fmt.Errorf("type %q has no TypeScript form here", t)
		}
	}
	return strings.Join(alts, " | "), nil
}
