package spec_test

import (
	"encoding/json"
	"flag"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/spec"
)

var rewrite = flag.Bool("rewrite", false, "print canonical.json's cases with the canonical text the reference computes")

type canonicalCase struct {
	ID        string          `json:"id"`
	Doc       json.RawMessage `json:"doc,omitempty"`
	Value     json.RawMessage `json:"value,omitempty"`
	Canonical string          `json:"canonical"`
}

// TestCanonicalCases: every case of canonical.json is what kbcore writes
// and what gowebpki/jcs (an independent RFC 8785 implementation) writes,
// for a document after its nodes are sorted by id.
func TestCanonicalCases(t *testing.T) {
	raw, err := spec.FS.ReadFile("canonical.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		SpecVersion int             `json:"spec_version"`
		Cases       []canonicalCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if file.SpecVersion != 1 || len(file.Cases) == 0 {
		t.Fatalf("canonical.json: spec_version %d, %d cases", file.SpecVersion, len(file.Cases))
	}
	for _, c := range file.Cases {
		var got, independent []byte
		switch {
		case c.Doc != nil && c.Value == nil:
			d, err := kbcore.ParseDoc(c.Doc)
			if err != nil {
				t.Fatalf("%s: %v", c.ID, err)
			}
			got, _ = d.MarshalJSON()
			independent = jcsDoc(t, c.ID, c.Doc)
		case c.Value != nil && c.Doc == nil:
			if got, err = kbcore.Canonical(c.Value); err != nil {
				t.Fatalf("%s: %v", c.ID, err)
			}
			if independent, err = jcs.Transform(c.Value); err != nil {
				t.Fatalf("%s: jcs: %v", c.ID, err)
			}
		default:
			t.Fatalf("%s: needs exactly one of doc and value", c.ID)
		}
		if *rewrite {
			t.Logf("%s\n%s", c.ID, mustJSON(string(got)))
			continue
		}
		if string(got) != c.Canonical {
			t.Errorf("%s: kbcore writes\n%s\nthe case says\n%s", c.ID, got, c.Canonical)
		}
		if string(independent) != c.Canonical {
			t.Errorf("%s: jcs writes\n%s\nthe case says\n%s", c.ID, independent, c.Canonical)
		}
	}
}

// jcsDoc is the document's canonical form by gowebpki/jcs: nodes sorted
// by id, then RFC 8785.
func jcsDoc(t *testing.T, id string, doc json.RawMessage) []byte {
	var d struct {
		Nodes []map[string]any `json:"nodes"`
		Page  map[string]any   `json:"page"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	sort.Slice(d.Nodes, func(i, j int) bool { return d.Nodes[i]["id"].(string) < d.Nodes[j]["id"].(string) })
	b, _ := json.Marshal(d)
	out, err := jcs.Transform(b)
	if err != nil {
		t.Fatalf("%s: jcs: %v", id, err)
	}
	return out
}

func mustJSON(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return b.String()
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(m.Run())
}
