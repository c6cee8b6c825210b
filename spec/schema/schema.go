package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"gopkg.in/yaml.v3"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/spec"
)

// BaseURL is the prefix of every schema $id; the rest is the file's path
// under spec/schema.
const BaseURL = "https://kbkit.dev/schema/"

// Schema file names under spec/schema.
const (
	EnvelopeSchema = "envelope.schema.json"
	DocumentSchema = "document.schema.json"
	NodeSchema     = "node.schema.json"
	CaseFileSchema = "case-file.schema.json"
	CommonSchema   = "common.schema.json"
)

// AdapterMessages lists the message types of the adapter protocol
// (spec/ADAPTER.md), each with a schema adapter/<type>.schema.json.
var AdapterMessages = []string{
	"init", "init_ok", "apply", "apply_ok", "tokenize", "tokenize_ok",
	"window", "window_ok", "plan", "plan_ok", "canonical", "canonical_ok", "error",
	"open", "open_ok", "intent", "intent_ok", "state", "state_ok", "close", "close_ok",
}

// AdapterSchema is the file name of an adapter message type's schema.
func AdapterSchema(typ string) string { return "adapter/" + typ + ".schema.json" }

// PayloadSchema is the file name of a command type's payload schema.
func PayloadSchema(typ string) string { return "payload/" + typ + ".schema.json" }

// ErrInvalid is matched (errors.Is) by every validation failure, so callers
// can tell a bad input (400) from a broken schema set (500).
var ErrInvalid = errors.New("schema: invalid")

// Error is a validation failure: one problem per failing field, each
// "<path>: <what is wrong>", sorted.
type Error struct {
	Problems []string
}

func (e *Error) Error() string { return strings.Join(e.Problems, "; ") }

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *Error) Unwrap() error { return ErrInvalid }

func invalid(problems ...string) *Error { return &Error{Problems: problems} }

// ---- compiled schemas ----

type compiled struct {
	envelope, document, caseFile *jsonschema.Schema
	payloads                     map[string]*jsonschema.Schema
	adapter                      map[string]*jsonschema.Schema
}

var (
	once       sync.Once
	schemas    *compiled
	compileErr error
)

// offline refuses every URL that AddResource did not register: the schemas
// come from spec.FS, never from the network or the file system.
type offline struct{}

func (offline) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema: %s is not an embedded kbkit schema (no network loads)", url)
}

func load() (*compiled, error) {
	once.Do(func() { schemas, compileErr = compileAll(spec.FS) })
	return schemas, compileErr
}

// Files returns the schema files of spec.FS (paths relative to spec/schema)
// with their parsed JSON.
func Files() (map[string]any, error) { return readFiles(spec.FS) }

func readFiles(fsys fs.FS) (map[string]any, error) {
	out := map[string]any{}
	err := fs.WalkDir(fsys, "schema", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || path.Ext(p) != ".json" {
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return fmt.Errorf("schema: %s: %w", p, err)
		}
		out[strings.TrimPrefix(p, "schema/")] = doc
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("schema: spec.FS holds no schema/*.json (check the go:embed line in spec/embed.go)")
	}
	return out, nil
}

func compileAll(fsys fs.FS) (*compiled, error) {
	files, err := readFiles(fsys)
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(offline{})
	for name, doc := range files {
		if err := c.AddResource(BaseURL+name, doc); err != nil {
			return nil, fmt.Errorf("schema: %s: %w", name, err)
		}
	}
	get := func(name string) (*jsonschema.Schema, error) {
		s, err := c.Compile(BaseURL + name)
		if err != nil {
			return nil, fmt.Errorf("schema: compile %s: %w", name, err)
		}
		return s, nil
	}
	out := &compiled{payloads: map[string]*jsonschema.Schema{}, adapter: map[string]*jsonschema.Schema{}}
	if out.envelope, err = get(EnvelopeSchema); err != nil {
		return nil, err
	}
	if out.document, err = get(DocumentSchema); err != nil {
		return nil, err
	}
	if out.caseFile, err = get(CaseFileSchema); err != nil {
		return nil, err
	}
	for _, t := range kbcore.Types {
		if out.payloads[t], err = get(PayloadSchema(t)); err != nil {
			return nil, err
		}
	}
	for _, t := range AdapterMessages {
		if out.adapter[t], err = get(AdapterSchema(t)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ---- validation entry points ----

// ValidateEnvelope checks a wire command envelope {id, device_id, page_id,
// type, payload}, payload included. Paths are relative to the envelope:
// "id: ...", "payload.node: missing".
func ValidateEnvelope(b []byte) error {
	s, err := load()
	if err != nil {
		return err
	}
	v, perr := parseJSON("envelope", b)
	if perr != nil {
		return perr
	}
	return check(s.envelope, v, "", "envelope")
}

// ValidatePayload checks a command payload against its type's schema. An
// empty payload means the key was absent. Paths start with "payload".
func ValidatePayload(typ string, payload []byte) error {
	s, err := load()
	if err != nil {
		return err
	}
	sch, ok := s.payloads[typ]
	if !ok {
		return invalid(fmt.Sprintf("type: unknown command type %q", typ))
	}
	if len(bytes.TrimSpace(payload)) == 0 {
		return invalid("payload: missing")
	}
	v, perr := parseJSON("payload", payload)
	if perr != nil {
		return perr
	}
	return check(sch, v, "payload", "payload")
}

// ValidateAdapterMessage checks one line of the adapter protocol (a
// request or a reply, spec/ADAPTER.md) against the schema of its type,
// adapter/<type>.schema.json. Paths are relative to the message.
func ValidateAdapterMessage(b []byte) error {
	s, err := load()
	if err != nil {
		return err
	}
	v, perr := parseJSON("message", b)
	if perr != nil {
		return perr
	}
	m, ok := v.(map[string]any)
	if !ok {
		return invalid("message: must be an object")
	}
	typ, ok := m["type"].(string)
	if !ok {
		return invalid("type: missing or not a string")
	}
	sch, ok := s.adapter[typ]
	if !ok {
		return invalid(fmt.Sprintf("type: unknown adapter message type %q", typ))
	}
	return check(sch, v, "", "message")
}

// ValidateDocument checks a document in canonical JSON form.
func ValidateDocument(b []byte) error {
	s, err := load()
	if err != nil {
		return err
	}
	v, perr := parseJSON("document", b)
	if perr != nil {
		return perr
	}
	return check(s.document, v, "", "document")
}

// ValidateCaseFile checks a YAML case file. Problems inside a case name
// the case: "cases[3].then.doc: missing (case indent/foo)".
func ValidateCaseFile(yamlBytes []byte) error {
	s, err := load()
	if err != nil {
		return err
	}
	var y any
	if err := yaml.Unmarshal(yamlBytes, &y); err != nil {
		return invalid("case file: not valid YAML: " + err.Error())
	}
	v, err := yamlToJSON(y)
	if err != nil {
		return invalid("case file: " + err.Error())
	}
	return check(s.caseFile, v, "", "case file")
}

func parseJSON(what string, b []byte) (any, *Error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, invalid(fmt.Sprintf("%s: not valid JSON: %v", what, err))
	}
	return v, nil
}

// yamlToJSON turns decoded YAML into the JSON values the validator reads
// (a JSON round trip, with mapping keys turned into strings first).
func yamlToJSON(y any) (any, error) {
	b, err := json.Marshal(stringKeys(y))
	if err != nil {
		return nil, fmt.Errorf("not representable as JSON: %v", err)
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}

func stringKeys(y any) any {
	switch t := y.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, v := range t {
			out[k] = stringKeys(v)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, v := range t {
			out[fmt.Sprint(k)] = stringKeys(v)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, v := range t {
			out[i] = stringKeys(v)
		}
		return out
	}
	return y
}

// ---- errors in plain words ----

func check(sch *jsonschema.Schema, v any, prefix, rootName string) error {
	err := sch.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return invalid(rootName + ": " + err.Error())
	}
	w := words{root: v, prefix: prefix, rootName: rootName, seen: map[string]bool{}}
	w.walk(ve, nil)
	if len(w.out) == 0 {
		w.add(nil, "does not match the schema")
	}
	sort.Strings(w.out)
	return invalid(w.out...)
}

type words struct {
	root             any
	prefix, rootName string
	out              []string
	seen             map[string]bool
}

func (w *words) add(loc []string, msg string) {
	s := w.path(loc) + ": " + msg
	if w.rootName == "case file" {
		if id := w.caseID(loc); id != "" {
			s += " (case " + id + ")"
		}
	}
	if !w.seen[s] {
		w.seen[s] = true
		w.out = append(w.out, s)
	}
}

// path writes an instance location as "a.b[2].c", resolving against the
// instance so that array indices and object keys that look like numbers
// are told apart.
func (w *words) path(loc []string) string {
	var sb strings.Builder
	sb.WriteString(w.prefix)
	cur := w.root
	for _, tok := range loc {
		switch c := cur.(type) {
		case []any:
			sb.WriteString("[" + tok + "]")
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(c) {
				cur = c[i]
			} else {
				cur = nil
			}
			continue
		case map[string]any:
			cur = c[tok]
		default:
			cur = nil
		}
		if plainKey(tok) {
			if sb.Len() > 0 {
				sb.WriteByte('.')
			}
			sb.WriteString(tok)
		} else {
			sb.WriteString("[" + strconv.Quote(tok) + "]")
		}
	}
	if sb.Len() == 0 {
		return w.rootName
	}
	return sb.String()
}

func plainKey(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

func (w *words) caseID(loc []string) string {
	if len(loc) < 2 || loc[0] != "cases" {
		return ""
	}
	top, _ := w.root.(map[string]any)
	list, _ := top["cases"].([]any)
	i, err := strconv.Atoi(loc[1])
	if err != nil || i < 0 || i >= len(list) {
		return ""
	}
	c, _ := list[i].(map[string]any)
	id, _ := c["id"].(string)
	return id
}

// walk collects the leaves under e; parent is the location of the error
// that holds e.
func (w *words) walk(e *jsonschema.ValidationError, parent []string) {
	if pn, ok := e.ErrorKind.(*kind.PropertyNames); ok {
		what := "is not allowed"
		if reasons := leafReasons(e.Causes); len(reasons) > 0 {
			what = reasons[0]
		}
		// jsonschema v6.0.3 records a propertyNames failure with a
		// location slice it goes on reusing; the object is the one the
		// enclosing error is about.
		w.add(parent, fmt.Sprintf("key %q %s", pn.Property, what))
		return
	}
	if len(e.Causes) > 0 {
		for _, c := range e.Causes {
			w.walk(c, slices.Clone(e.InstanceLocation))
		}
		return
	}
	for _, m := range leaf(e) {
		w.add(m.loc, m.msg)
	}
}

// leafReasons returns the messages of the leaves under causes, without
// paths (a property name is validated as a value of its own).
func leafReasons(causes []*jsonschema.ValidationError) []string {
	var out []string
	for _, c := range causes {
		if len(c.Causes) > 0 {
			out = append(out, leafReasons(c.Causes)...)
			continue
		}
		for _, m := range leaf(c) {
			out = append(out, m.msg)
		}
	}
	return out
}

type located struct {
	loc []string
	msg string
}

// defName is the $defs entry that the failing keyword belongs to, if any.
func defName(schemaURL string) string {
	_, frag, ok := strings.Cut(schemaURL, "#/$defs/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(frag, "/")
	return name
}

// defWords says in plain words what a value failing a named definition is
// not.
var defWords = map[string]string{
	"uuid":           "is not a lower-case hyphenated uuid (like 0b5e8f1c-2d3a-4b6c-8d9e-0f1a2b3c4d5e)",
	"nullableUuid":   "is not a lower-case hyphenated uuid or null",
	"nodeId":         "is not a node id (1-64 characters of A-Z a-z 0-9 _ -)",
	"nullableNodeId": "is not a node id (1-64 characters of A-Z a-z 0-9 _ -) or null",
	"rank":           "is not a valid rank (fractional-index key)",
	"cellName":       "is not a cell name like B2 (1-3 upper-case letters, then a row 1-999999 without leading zeros)",
	"cellRef":        "is not a cell reference like B2 (1-3 upper-case letters, then a row 1-9999999 without leading zeros)",
	"title":          "contains a control character",
	"alias":          "is empty or contains a control character",
}

var printer = message.NewPrinter(language.English)

func leaf(e *jsonschema.ValidationError) []located {
	loc := e.InstanceLocation
	one := func(msg string) []located { return []located{{loc, msg}} }
	def := defName(e.SchemaURL)
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		var out []located
		for _, m := range k.Missing {
			out = append(out, located{append(slices.Clone(loc), m), "missing"})
		}
		return out
	case *kind.AdditionalProperties:
		var out []located
		for _, p := range k.Properties {
			out = append(out, located{append(slices.Clone(loc), p), "unknown field"})
		}
		return out
	case *kind.FalseSchema:
		return one("not allowed here")
	case *kind.Type:
		return one(fmt.Sprintf("must be %s, got %s", typeWords(k.Want), withArticle(k.Got)))
	case *kind.Pattern, *kind.Not:
		if s, ok := defWords[def]; ok {
			return one(s)
		}
		if p, ok := k.(*kind.Pattern); ok {
			return one(fmt.Sprintf("%q does not match the pattern %s", p.Got, p.Want))
		}
		return one("is not allowed")
	case *kind.Enum:
		switch def {
		case "commandType":
			return one(fmt.Sprintf("unknown command type %s", jsonText(k.Got)))
		case "rejectionCode":
			return one(fmt.Sprintf("unknown rejection code %s", jsonText(k.Got)))
		}
		want := make([]string, len(k.Want))
		for i, x := range k.Want {
			want[i] = jsonText(x)
		}
		return one(fmt.Sprintf("%s is not one of %s", jsonText(k.Got), strings.Join(want, ", ")))
	case *kind.Const:
		return one(fmt.Sprintf("must be %s, got %s", jsonText(k.Want), jsonText(k.Got)))
	case *kind.MinItems:
		if k.Want == 1 {
			return one("must not be empty")
		}
		return one(fmt.Sprintf("must have at least %d items, got %d", k.Want, k.Got))
	case *kind.MinLength:
		if k.Want == 1 {
			return one("must not be empty")
		}
		return one(fmt.Sprintf("must be at least %d characters long", k.Want))
	case *kind.MinProperties:
		if k.Want == 1 {
			return one("must not be empty")
		}
		return one(fmt.Sprintf("must have at least %d keys", k.Want))
	case *kind.MaxProperties:
		if k.Want == 1 {
			return one(fmt.Sprintf("must have exactly one key, got %d", k.Got))
		}
		return one(fmt.Sprintf("must have at most %d keys, got %d", k.Want, k.Got))
	case *kind.Minimum:
		return one(fmt.Sprintf("must be at least %s", k.Want.RatString()))
	case *kind.MaxLength:
		return one(fmt.Sprintf("is longer than %d characters (spec/PROTOCOL.md section 8)", k.Want))
	case *kind.MaxItems:
		return one(fmt.Sprintf("has more than %d items (spec/PROTOCOL.md section 8)", k.Want))
	}
	return one(e.ErrorKind.LocalizedString(printer))
}

// typeWords writes JSON Schema type names as "a string or null".
func typeWords(want []string) string {
	parts := make([]string, 0, len(want))
	null := false
	for _, t := range want {
		if t == "null" {
			null = true
			continue
		}
		parts = append(parts, withArticle(t))
	}
	if null {
		parts = append(parts, "null")
	}
	return strings.Join(parts, " or ")
}

func withArticle(t string) string {
	switch t {
	case "null":
		return "null"
	case "object", "array", "integer":
		return "an " + t
	}
	return "a " + t
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
