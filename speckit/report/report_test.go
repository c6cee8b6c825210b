package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/subspace/kbkit/internal/version"
	"github.com/subspace/kbkit/speckit/cases"
)

func outcome(id string, st cases.Status, diff string) cases.Outcome {
	return cases.Outcome{ID: id, Suite: cases.SuiteTokenizer, File: "tokenizer.yaml", Line: 7, Status: st, Diff: diff}
}

func TestJudge(t *testing.T) {
	fail := &Expectation{ID: "x/*", Status: ExpectFail, Reason: "not yet"}
	for _, tc := range []struct {
		st   cases.Status
		e    *Expectation
		want Verdict
		exit int
	}{
		{cases.Pass, nil, VerdictPass, 0},
		{cases.Pass, fail, VerdictUnexpectedPass, 1},
		{cases.Fail, nil, VerdictFail, 1},
		{cases.Fail, fail, VerdictExpectedFail, 0},
		{cases.Error, nil, VerdictError, 2},
		{cases.Error, fail, VerdictExpectedFail, 0},
		{cases.Skip, nil, VerdictSkip, 0},
		{cases.Skip, fail, VerdictSkip, 0},
	} {
		r := Judge(outcome("x/y", tc.st, "d"), tc.e)
		var s Summary
		s.Add(r)
		if r.Verdict != tc.want || s.ExitCode() != tc.exit {
			t.Errorf("Judge(%s, %v) = %s exit %d, want %s exit %d", tc.st, tc.e != nil, r.Verdict, s.ExitCode(), tc.want, tc.exit)
		}
	}
	var s Summary
	s.Add(Judge(outcome("a", cases.Fail, ""), nil))
	s.Add(Judge(outcome("b", cases.Error, "boom"), nil))
	if s.ExitCode() != ExitErrored || strings.Join(s.Failed, ",") != "a,b" {
		t.Errorf("summary %v exit %d failed %v", s, s.ExitCode(), s.Failed)
	}
}

const goodExpect = `# comment
spec_version: 1
expectations:
  - id: tokenizer/label-*
    status: fail
    reason: labels are not done
    issue: https://example.com/issues/1
  - {id: tokenizer/*, status: skip, reason: later}
  - {id: edit-text/exact, status: fail, reason: exact id}
`

func TestExpectations(t *testing.T) {
	x, err := ParseExpectations("e.yaml", []byte(goodExpect))
	if err != nil {
		t.Fatal(err)
	}
	if e := x.Match("tokenizer/label-number"); e == nil || e.Status != ExpectFail || e.Issue == "" {
		t.Errorf("label-number matched %+v", e)
	}
	if e := x.Match("tokenizer/links"); e == nil || e.Status != ExpectSkip {
		t.Errorf("links matched %+v", e)
	}
	if e := x.Match("tokenizer/a/b"); e != nil {
		t.Errorf("* matched a slash: %+v", e)
	}
	if e := x.Match("edit-text/other"); e != nil {
		t.Errorf("edit-text/other matched %+v", e)
	}
	if u := x.Unused(); len(u) != 1 || u[0].ID != "edit-text/exact" {
		t.Errorf("Unused = %+v", u)
	}
	var none *Expectations
	if none.Match("a") != nil || none.Unused() != nil {
		t.Error("nil expectations matched")
	}

	dir := t.TempDir()
	p := filepath.Join(dir, "e.yaml")
	os.WriteFile(p, []byte(goodExpect), 0o644)
	if _, err := LoadExpectations(p); err != nil {
		t.Error(err)
	}
	if _, err := LoadExpectations(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("a missing file loaded")
	}

	for name, bad := range map[string]string{
		"status":       "spec_version: 1\nexpectations: [{id: a, status: flaky, reason: r}]",
		"no reason":    "spec_version: 1\nexpectations: [{id: a, status: fail}]",
		"empty reason": "spec_version: 1\nexpectations: [{id: a, status: fail, reason: ''}]",
		"unknown key":  "spec_version: 1\nexpectations: [{id: a, status: fail, reason: r, owner: me}]",
		"issue":        "spec_version: 1\nexpectations: [{id: a, status: fail, reason: r, issue: 'see #12'}]",
		"version":      "spec_version: 3\nexpectations: []",
		"no version":   "expectations: []",
		"glob":         "spec_version: 1\nexpectations: [{id: 'a/[', status: fail, reason: r}]",
		"yaml":         "spec_version: [",
		"top":          "- a",
	} {
		if _, err := ParseExpectations("bad.yaml", []byte(bad)); err == nil {
			t.Errorf("%s: accepted %q", name, bad)
		}
	}
	if _, err := ParseExpectations("e.json", []byte(`{"spec_version":1,"expectations":[]}`)); err != nil {
		t.Errorf("JSON form: %v", err)
	}
}

// results is a small run covering every verdict.
func results() []Result {
	e := &Expectation{ID: "t/*", Status: ExpectFail, Reason: "known", Issue: "https://example.com/1"}
	skip := &Expectation{ID: "s", Status: ExpectSkip, Reason: "later"}
	tricky := "doc:\n    leading spaces\n- \"a\\u0000\" \x01 \u2028 end\n+ b # not a comment\n"
	return []Result{
		Judge(outcome("t/pass", cases.Pass, ""), nil),
		Judge(outcome("t/fail#1", cases.Fail, tricky), nil),
		Judge(outcome("t/todo", cases.Fail, "- a\n+ b\n"), e),
		Judge(outcome("t/unexpected", cases.Pass, ""), e),
		Judge(outcome("t/error", cases.Error, "adapter: timeout\nmore"), nil),
		Judge(outcome("t/unsupported", cases.Skip, "cases: not supported: x"), nil),
		NotRun(cases.Case{ID: "s", File: "f.yaml", Line: 1, When: map[string]any{"text": "x"}}, skip),
	}
}

func run(w Writer, rs []Result) Summary {
	var s Summary
	w.Begin(len(rs))
	for i, r := range rs {
		s.Add(r)
		w.Result(i+1, r)
	}
	w.End(s)
	return s
}

func TestTAP(t *testing.T) {
	var b bytes.Buffer
	rs := results()
	s := run(NewTAP(&b), rs)
	out := b.String()
	for _, want := range []string{
		"TAP version 14\n1..7\n# kbkit " + version.Kit + " spec_version " + strconv.Itoa(version.Spec) + "\n",
		"ok 1 - t/pass\n",
		"not ok 2 - t/fail\\#1\n  ---\n",
		"not ok 3 - t/todo # TODO expected failure: known\n",
		"not ok 4 - t/unexpected\n",
		"not ok 5 - t/error\n",
		"ok 6 - t/unsupported # SKIP cases: not supported: x\n",
		"ok 7 - s # SKIP expected skip: later\n",
		"# 7 cases: 1 passed, 1 failed, 1 errored, 1 passed unexpectedly, 1 failed as expected, 2 skipped\n",
		"# not ok (3):\n#   t/fail#1\n#   t/unexpected\n#   t/error\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("TAP lacks %q:\n%s", want, out)
		}
	}
	if s.ExitCode() != ExitErrored {
		t.Errorf("exit %d", s.ExitCode())
	}
	// Every YAML block parses, and the diff survives exactly.
	blocks := 0
	lines := strings.Split(out, "\n")
	for i := 0; i < len(lines); i++ {
		if lines[i] != "  ---" {
			continue
		}
		var doc []string
		for i++; lines[i] != "  ..."; i++ {
			if lines[i] != "" && !strings.HasPrefix(lines[i], "  ") {
				t.Fatalf("line %q of a YAML block is not indented", lines[i])
			}
			doc = append(doc, strings.TrimPrefix(lines[i], "  "))
		}
		var d map[string]any
		if err := yaml.Unmarshal([]byte(strings.Join(doc, "\n")), &d); err != nil {
			t.Fatalf("YAML block does not parse: %v\n%s", err, strings.Join(doc, "\n"))
		}
		blocks++
		if d["message"] == nil || d["severity"] == nil {
			t.Errorf("block without message or severity: %v", d)
		}
		if blocks == 1 && d["diff"] != strings.TrimRight(rs[1].Diff, "\n") {
			t.Errorf("diff = %q, want %q", d["diff"], rs[1].Diff)
		}
		if blocks == 2 {
			exp, _ := d["expected"].(map[string]any)
			if exp["issue"] != "https://example.com/1" {
				t.Errorf("TODO block lacks the expectation: %v", d)
			}
		}
	}
	if blocks != 4 {
		t.Errorf("%d YAML blocks, want 4 (fail, todo, unexpected pass, error)", blocks)
	}
}

func TestJUnit(t *testing.T) {
	var b bytes.Buffer
	run(NewJUnit(&b, "kbkit spec"), results())
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Skipped  int `xml:"skipped,attr"`
		Suites   []struct {
			Name       string `xml:"name,attr"`
			Properties []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
			Cases []struct {
				Name      string `xml:"name,attr"`
				Classname string `xml:"classname,attr"`
				Failure   *struct {
					Message string `xml:"message,attr"`
					Body    string `xml:",chardata"`
				} `xml:"failure"`
				Error   *struct{} `xml:"error"`
				Skipped *struct{} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if doc.Tests != 7 || doc.Failures != 2 || doc.Errors != 1 || doc.Skipped != 3 {
		t.Errorf("counts %+v\n%s", doc, b.String())
	}
	if len(doc.Suites) != 1 || doc.Suites[0].Name != "tokenizer" {
		t.Fatalf("suites %+v", doc.Suites)
	}
	if p := doc.Suites[0].Properties; len(p) != 2 || p[0].Name != "kbkit.version" || p[0].Value != version.Kit ||
		p[1].Name != "kbkit.spec_version" || p[1].Value != strconv.Itoa(version.Spec) {
		t.Errorf("properties %+v, want the kit's version and spec_version", p)
	}
	c := doc.Suites[0].Cases[1]
	if c.Name != "t/fail#1" || c.Classname != "tokenizer" || c.Failure == nil || !strings.Contains(c.Failure.Body, "leading spaces") {
		t.Errorf("failing case %+v", c)
	}
	if doc.Suites[0].Cases[4].Error == nil || doc.Suites[0].Cases[2].Skipped == nil {
		t.Error("error or expected failure not marked")
	}
}

func TestJSON(t *testing.T) {
	var b bytes.Buffer
	rs := results()
	run(NewJSON(&b), rs)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != len(rs) {
		t.Fatalf("%d lines, want %d", len(lines), len(rs))
	}
	for i, l := range lines {
		var r Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if r.ID != rs[i].ID || r.Verdict != rs[i].Verdict || r.OK != rs[i].Verdict.OK() || r.Suite == "" || r.File == "" ||
			r.Kit != version.Kit || r.SpecVersion != version.Spec {
			t.Errorf("line %d = %+v", i, r)
		}
	}
	var r Record
	json.Unmarshal([]byte(lines[2]), &r)
	if r.Status != "fail" || r.Expected == nil || r.Expected.Reason != "known" || r.Diff == "" {
		t.Errorf("expected failure record %+v", r)
	}
}

func TestProgressOffTerminal(t *testing.T) {
	var b bytes.Buffer
	if p := NewProgress(&b, 10); p != nil {
		t.Error("progress on a buffer")
	}
	var p *Progress
	p.Update(1, Summary{}, "x") // a nil progress does nothing
	p.Clear()
}
