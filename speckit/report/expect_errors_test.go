package report

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Errors in an expectations file name the line of the problem (not the
// line where yaml.v3's enclosing list began) and a schema that exists.
func TestExpectationsErrorLines(t *testing.T) {
	for _, tc := range []struct{ name, file, want string }{
		{"indent", "spec_version: 1\nexpectations:\n  - id: a\n    status: fail\n   reason: x\n", "e.yaml:5: did not find expected '-' indicator"},
		{"tab", "spec_version: 1\nexpectations:\n  - id: a\n    status: fail\n    reason: x\n\t- id: b\n", "e.yaml:6: found a tab character"},
		{"flow", "spec_version: 1\nexpectations:\n  - id: a\n    status: fail\n    reason: x\n  - id: [b\n", "e.yaml:6: did not find expected ',' or ']'"},
		{"quote", "spec_version: 1\nexpectations:\n  - id: a\n    status: fail\n    reason: \"x\n", "e.yaml:5: found unexpected end of stream"},
		{"status", "spec_version: 1\nexpectations:\n  - id: a\n    status: flaky\n    reason: x\n", "\n  e.yaml:4: at /expectations/0/status: value must be one of 'fail', 'skip', 'known_flaky'"},
		{"missing", "spec_version: 1\nexpectations:\n  - id: a\n    reason: x\n  - id: b\n    status: fail\n", "\n  e.yaml:3: at /expectations/0: missing property 'status'\n  e.yaml:5: at /expectations/1: missing property 'reason'"},
		{"glob", "spec_version: 1\nexpectations:\n  - id: a\n    status: fail\n    reason: x\n  - {id: 'b/[', status: fail, reason: y}\n", "e.yaml:6: expectations[1]: bad glob"},
	} {
		_, err := ParseExpectations("e.yaml", []byte(tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	_, err := ParseExpectations("e.yaml", []byte("expectations: []\n"))
	if err == nil || !strings.Contains(err.Error(), "("+SchemaPath+";") || strings.Contains(err.Error(), "file://") {
		t.Errorf("schema error names no schema of this repository: %v", err)
	}
	_, here, _, _ := runtime.Caller(0)
	if _, err := os.Stat(filepath.Join(filepath.Dir(here), "..", "..", filepath.FromSlash(SchemaPath))); err != nil {
		t.Errorf("the schema the errors cite is missing: %v", err)
	}
}

// An exact id after a glob that covers it is never reached; ShadowedBy
// names the glob.
func TestExpectationsShadowed(t *testing.T) {
	x, err := ParseExpectations("e.yaml", []byte(goodExpect+"  - {id: tokenizer/label-x, status: skip, reason: shadowed}\n"))
	if err != nil {
		t.Fatal(err)
	}
	x.Match("tokenizer/label-x")
	var shadowed []string
	for _, e := range x.Unused() {
		if by := x.ShadowedBy(e); by != nil {
			shadowed = append(shadowed, e.ID+" by "+by.ID)
			if e.Line != 10 || by.Line != 4 {
				t.Errorf("lines %d and %d, want 10 and 4", e.Line, by.Line)
			}
		}
	}
	if strings.Join(shadowed, ",") != "tokenizer/label-x by tokenizer/label-*" {
		t.Errorf("shadowed: %v", shadowed)
	}
}
