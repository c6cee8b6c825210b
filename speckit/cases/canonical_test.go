package cases

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// canonicalCases are the built-in spec's canonical cases.
func canonicalCases(t *testing.T) []Case {
	t.Helper()
	var out []Case
	for _, c := range ForTest(t) {
		if c.Suite() == SuiteCanonical {
			out = append(out, c)
		}
	}
	if len(out) < 10 {
		t.Fatalf("%d canonical cases in the built-in spec", len(out))
	}
	return out
}

// Every vector of spec/canonical.json is a case canonical/<id> whose
// input is sent as the file writes it (escapes and number spellings
// kept, on one line), and the reference passes it.
func TestCanonicalCasesLoad(t *testing.T) {
	for _, c := range canonicalCases(t) {
		if !strings.HasPrefix(c.ID, "canonical/") || c.Line == 0 || !strings.HasSuffix(c.File, "canonical.json") {
			t.Errorf("%s at %s:%d", c.ID, c.File, c.Line)
		}
		if o := Check(context.Background(), Reference{}, c); o.Status != Pass {
			t.Errorf("%s: the reference: %s %s", c.ID, o.Status, o.Diff)
		}
	}
	byID := map[string]Case{}
	for _, c := range canonicalCases(t) {
		byID[c.ID] = c
	}
	doc, _ := byID["canonical/html-characters-as-themselves"].When["doc"].(json.RawMessage)
	if !strings.Contains(string(doc), `a<b>&c \u003c\u003e\u0026`) || strings.Contains(string(doc), "\n") {
		t.Errorf("the input is not sent as written, on one line: %s", doc)
	}
	num, _ := byID["canonical/numbers-as-ecmascript-writes-them"].When["value"].(json.RawMessage)
	if !strings.Contains(string(num), "[0,-0,1.0,1e3,1E+2,") {
		t.Errorf("the numbers are not sent as spelt: %s", num)
	}
}

// goJSON is a canonical writer an implementation could well ship:
// encoding/json's, which sorts keys by bytes, escapes <, >, & and
// U+2028/U+2029 and writes numbers its own way.
type goJSON struct{ Reference }

func (goJSON) Canonical(_ context.Context, req CanonicalRequest) (string, error) {
	in := req.Value
	if in == nil {
		in = req.Doc
	}
	var v any
	if err := json.Unmarshal(in, &v); err != nil {
		return "", err
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// emptyText answers every request with an empty text.
type emptyText struct{ Reference }

func (emptyText) Canonical(context.Context, CanonicalRequest) (string, error) { return "", nil }

// noCanonical implements no canonical writer.
type noCanonical struct{ Impl }

// A wrong canonical writer fails the cases its bytes differ on, and the
// diff says where and which rule; an empty text fails every case (never
// a pass); an implementation without a writer skips them.
func TestWrongCanonicalWriterFails(t *testing.T) {
	ctx := context.Background()
	rules := map[string]string{
		"canonical/html-characters-as-themselves":               "'<', '>' and '&' are written as themselves",
		"canonical/line-and-paragraph-separators-as-themselves": "U+2028 and U+2029 are written as themselves",
		"canonical/keys-sorted-by-utf16-code-units":             "sorted by UTF-16 code units",
		"canonical/numbers-as-ecmascript-writes-them":           "at byte",
		"canonical/nodes-by-id-keys-and-cells-sorted":           "at byte",
	}
	for _, c := range canonicalCases(t) {
		o := Check(ctx, goJSON{}, c)
		if rule, ok := rules[c.ID]; ok {
			if o.Status != Fail || !strings.Contains(o.Diff, rule) || !strings.HasPrefix(o.Diff, "canonical:\n") {
				t.Errorf("%s: encoding/json's writer: %s, want a failure saying %q:\n%s", c.ID, o.Status, rule, o.Diff)
			}
			if o.Input["type"] != "canonical" {
				t.Errorf("%s: the failure's input is %v", c.ID, o.Input)
			}
		}
		if o := Check(ctx, emptyText{}, c); o.Status != Fail || !strings.Contains(o.Diff, "at byte 0") {
			t.Errorf("%s: an empty text: %s %s, want a failure at byte 0", c.ID, o.Status, o.Diff)
		}
		if o := Check(ctx, noCanonical{Reference{}}, c); o.Status != Skip {
			t.Errorf("%s: an implementation without a canonical writer: %s, want skip", c.ID, o.Status)
		}
	}
}

// A file of vectors that is not one (no canonical text, both inputs, an
// id with a slash) is refused, naming the file.
func TestParseCanonicalRefusesBadVectors(t *testing.T) {
	for name, data := range map[string]string{
		"no text":    `{"spec_version": 2, "cases": [{"id": "x", "value": 1}]}`,
		"empty text": `{"spec_version": 2, "cases": [{"id": "x", "value": 1, "canonical": ""}]}`,
		"both":       `{"spec_version": 2, "cases": [{"id": "x", "value": 1, "doc": {}, "canonical": "1"}]}`,
		"slash":      `{"spec_version": 2, "cases": [{"id": "a/b", "value": 1, "canonical": "1"}]}`,
		"no version": `{"cases": [{"id": "x", "value": 1, "canonical": "1"}]}`,
	} {
		if _, err := ParseCanonical("v.json", []byte(data)); err == nil || !strings.Contains(err.Error(), "v.json") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
