package matrix

import (
	"bytes"
	"strings"
	"testing"

	"github.com/subspace/kbkit/speckit/report"
)

func rec(id, suite string, v report.Verdict) report.Record {
	r := report.Record{ID: id, Suite: suite, Verdict: v, File: suite + ".yaml", Line: 1}
	if v != report.VerdictPass && v != report.VerdictSkip {
		r.Diff, r.Input = "-  a\n+  b", map[string]any{"text": "<x & y>"}
	}
	if v == report.VerdictExpectedFail {
		r.Expected = &report.Expectation{ID: id, Status: "fail", Reason: "not done yet"}
	}
	return r
}

// records of four suites; verdicts overrides some cases.
func records(verdicts map[string]report.Verdict) []report.Record {
	var out []report.Record
	for _, s := range []string{"commands", "tokenizer", "window", "planner"} {
		for _, n := range []string{"a", "b"} {
			id := s + "/" + n
			v := report.VerdictPass
			if w, ok := verdicts[id]; ok {
				v = w
			}
			out = append(out, rec(id, s, v))
		}
	}
	return out
}

// TestTiers: each tier's threshold, at its boundary.
func TestTiers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		verdicts map[string]report.Verdict
		err      string
		want     Tier
	}{
		{"every case passes", nil, "", TierComplete},
		{"an expected failure outside the core suites", map[string]report.Verdict{"tokenizer/a": report.VerdictExpectedFail}, "", TierCompatible},
		{"a skip outside the core suites", map[string]report.Verdict{"planner/b": report.VerdictSkip}, "", TierCompatible},
		{"a skip in the window suite", map[string]report.Verdict{"window/a": report.VerdictSkip}, "", TierPartial},
		{"an expected failure in commands", map[string]report.Verdict{"commands/b": report.VerdictExpectedFail}, "", TierPartial},
		{"a failure", map[string]report.Verdict{"planner/a": report.VerdictFail}, "", TierFailing},
		{"an unexpected pass", map[string]report.Verdict{"tokenizer/a": report.VerdictUnexpectedPass}, "", TierFailing},
		{"an error", map[string]report.Verdict{"window/b": report.VerdictError}, "", TierFailing},
		{"could not run", nil, "no adapter", TierNotRun},
	} {
		im := Impl{Name: "x", Records: records(tc.verdicts), Err: tc.err}
		if tc.err != "" {
			im.Records = nil
		}
		if got := Build([]Impl{im}).Rows[0].Tier; got != tc.want.Name {
			t.Errorf("%s: tier %s, want %s", tc.name, got, tc.want.Name)
		}
	}
}

func TestBuildAndOutputs(t *testing.T) {
	m := Build([]Impl{
		{Name: "ref", Source: "the built-in reference", Records: records(nil)},
		{Name: "partial", Source: "node a.mjs", Expect: "e.yaml", Records: records(map[string]report.Verdict{
			"commands/a": report.VerdictFail, "tokenizer/b": report.VerdictExpectedFail, "window/a": report.VerdictSkip})},
	})
	if strings.Join(m.Suites, ",") != "commands,tokenizer,window,planner" {
		t.Errorf("suites %v", m.Suites)
	}
	r := m.Rows[1]
	if c := r.Suites["commands"]; c.Total != 2 || c.Pass != 1 || c.Fail != 1 {
		t.Errorf("commands %+v", c)
	}
	if len(r.Failures) != 2 || r.Failures[0].ID != "commands/a" || r.Failures[1].ID != "tokenizer/b" {
		t.Errorf("failures (failures first, then expected ones): %+v", r.Failures)
	}
	if b := Badge(r); b.SchemaVersion != 1 || b.Label != "kbkit spec" || b.Message != "failing · 5/8 passed" || b.Color != "red" {
		t.Errorf("badge %+v", b)
	}
	if b := Badge(m.Rows[0]); b.Message != "complete · 8/8 passed" || b.Color != "brightgreen" {
		t.Errorf("badge %+v", b)
	}
	var text, page bytes.Buffer
	if err := m.Text(&text); err != nil {
		t.Fatal(err)
	}
	// Counts in words: "1s" would read as a second.
	if !strings.Contains(text.String(), "partial         1/2, 1 failed  1/2, 1 expected to fail  1/2, 1 skipped  2/2      failing\n") {
		t.Errorf("text:\n%s", text.String())
	}
	if err := m.HTML(&page); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`<tr data-impl="partial" data-tier="failing">`,
		`<td class="bad" data-suite="commands" data-pass="1" data-total="2" data-fail="1"`,
		`<a href="#impl-1-commands">`,
		`<h4 id="impl-1-commands" class="suite">commands: 1 not passed</h4>`,
		`<div class="case v-fail" data-case="commands/a" data-verdict="fail" data-suite="commands">`,
		`expectations: not done yet`,
		`&#34;text&#34;: &#34;\u003cx \u0026 y\u003e&#34;`,
	} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("page lacks %s", want)
		}
	}
	for _, bad := range []string{"<link", "src=", "http://", "@import"} {
		if strings.Contains(page.String(), bad) {
			t.Errorf("page is not self-contained: %s", bad)
		}
	}
	// JSON round trip.
	var j bytes.Buffer
	if err := m.WriteJSON(&j); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(&j)
	if err != nil || len(back.Rows) != 2 || back.Rows[1].Verdicts["commands/a"] != report.VerdictFail {
		t.Errorf("round trip: %v %+v", err, back)
	}
	if _, err := ReadJSON(strings.NewReader(`{"version":7}`)); err == nil {
		t.Error("read a matrix of another version")
	}
}

// TestCompare: what changed since an earlier matrix, new failures first.
func TestCompare(t *testing.T) {
	old := Build([]Impl{
		{Name: "a", Records: records(map[string]report.Verdict{"commands/a": report.VerdictFail, "window/b": report.VerdictExpectedFail})},
		{Name: "gone", Records: records(nil)},
	})
	recs := records(map[string]report.Verdict{"tokenizer/a": report.VerdictFail, "planner/b": report.VerdictExpectedFail, "window/b": report.VerdictPass})
	recs = append(recs[1:], rec("commands/c", "commands", report.VerdictPass)) // commands/a removed, commands/c new
	now := Build([]Impl{{Name: "a", Records: recs}, {Name: "new", Records: records(nil)}})
	now.Compare(old, "old.json")
	var got []string
	for _, c := range now.Changes {
		got = append(got, c.Kind+" "+c.Impl+" "+c.ID+" "+c.Was+">"+c.Now)
	}
	want := []string{
		"new failure a tokenizer/a pass>fail",
		"now expected a planner/b pass>expected-fail",
		"now passing a window/b expected-fail>pass",
		"new case a commands/c >pass",
		"removed case a commands/a fail>",
		"new implementation new  >complete",
		"removed implementation gone  complete>",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var page bytes.Buffer
	if err := now.HTML(&page); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), `<h2>Changes since old.json</h2>`) || !strings.Contains(page.String(), `<tr data-kind="new failure"><td class="c-new-failure">new failure</td><td>a</td><td>tokenizer/a</td>`) {
		t.Error("page lacks the changes")
	}
}

func TestReadRecords(t *testing.T) {
	if _, err := ReadRecords(strings.NewReader("")); err == nil {
		t.Error("read no records")
	}
	if _, err := ReadRecords(strings.NewReader(`{"id":"a"}` + "\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("a record without suite or verdict: %v", err)
	}
	recs, err := ReadRecords(strings.NewReader(`{"id":"a/b","suite":"commands","verdict":"pass","ok":true}` + "\n\n"))
	if err != nil || len(recs) != 1 {
		t.Errorf("%v %v", recs, err)
	}
}
