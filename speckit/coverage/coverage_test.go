package coverage_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/subspace/kbkit/spec"
	"github.com/subspace/kbkit/speckit/cases"
	"github.com/subspace/kbkit/speckit/coverage"
)

// TestEveryNormativeSentenceTagged holds the prose to the tagging rule:
// every sentence with a key word and every rule-table row carries one
// [req: id], and no id is tagged twice.
func TestEveryNormativeSentenceTagged(t *testing.T) {
	reqs, probs, err := coverage.ReadProse(spec.FS)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probs {
		t.Error(p)
	}
	if len(reqs) == 0 {
		t.Fatal("no requirement read from spec/*.md")
	}
}

// TestEveryMUSTTestedOrWaived is the test that fails CI when a MUST of
// spec/*.md is neither tested by a case, check or checker nor waived in
// spec/waivers.yaml (kbkit spec coverage --uncovered lists them).
func TestEveryMUSTTestedOrWaived(t *testing.T) {
	rep, err := coverage.Build(spec.FS, coverage.Kit(cases.ForTest(t)))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range rep.Uncovered(coverage.MUST) {
		t.Errorf("%s:%d: [req: %s] is a MUST no case, check or checker tests and spec/waivers.yaml does not waive", e.File, e.Line, e.ID)
	}
	s := rep.Summary()
	if s.Covered == 0 || s.MUST == 0 {
		t.Errorf("summary %v: nothing covered", s)
	}
	t.Log(s)
}

// TestDeclarationsNameKnownIDs: every case, check and checker the report
// ties to a requirement is one spec/ids.txt lists.
func TestDeclarationsNameKnownIDs(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "spec", "ids.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	known := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if kind, id, ok := strings.Cut(sc.Text(), " "); ok && kind != "#" {
			known[kind+" "+id] = true
		}
	}
	rep, err := coverage.Build(spec.FS, coverage.Kit(cases.ForTest(t)))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range rep.Entries {
		for kind, ids := range map[string][]string{"case": e.Cases, "check": e.Checks, "checker": e.Checkers} {
			for _, id := range ids {
				n++
				if !known[kind+" "+id] {
					t.Errorf("%s is tied to %s %s, which spec/ids.txt does not list", e.ID, kind, id)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no declaration to check")
	}
}

// specFS is a spec directory of one file, README.md, and its waivers.
func specFS(readme, waivers string) fstest.MapFS {
	m := fstest.MapFS{"README.md": {Data: []byte(readme)}}
	if waivers != "" {
		m["waivers.yaml"] = &fstest.MapFile{Data: []byte(waivers)}
	}
	return m
}

// kitWith is the kit's sources with no case and the given declarations.
func kitWith(checks map[string][]string) coverage.Sources {
	src := coverage.Kit(nil)
	src.Checks, src.Checkers, src.CaseCovers = checks, nil, nil
	return src
}

// TestUncoveredMUSTIsFound proves the CI test can fail: a MUST nothing
// tests is uncovered, a SHOULD too but it is not a MUST, and a check's
// declaration or a waiver covers it.
func TestUncoveredMUSTIsFound(t *testing.T) {
	readme := "# Spec\n\nA server MUST answer. [req: x.answer]\nA client should wait. [req: x.wait]\n"
	rep, err := coverage.Build(specFS(readme, ""), kitWith(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Uncovered(coverage.MUST); len(got) != 1 || got[0].ID != "x.answer" || got[0].Line != 3 {
		t.Fatalf("uncovered MUSTs = %+v, want x.answer at line 3", got)
	}
	if got := rep.Uncovered(""); len(got) != 2 || got[1].Level != coverage.SHOULD {
		t.Fatalf("uncovered = %+v, want x.answer and the SHOULD x.wait", got)
	}
	rep, err = coverage.Build(specFS(readme, ""), kitWith(map[string][]string{"protocol/healthz": {"x.answer"}}))
	if err != nil || len(rep.Uncovered(coverage.MUST)) != 0 {
		t.Fatalf("with a check declaring it: err %v, uncovered %+v", err, rep.Uncovered(coverage.MUST))
	}
	rep, err = coverage.Build(specFS(readme, "waivers:\n  - id: x.answer\n    reason: not observable\n"), kitWith(nil))
	if err != nil || len(rep.Uncovered(coverage.MUST)) != 0 || rep.Entries[0].Waiver != "not observable" {
		t.Fatalf("waived: err %v, entries %+v", err, rep.Entries)
	}
}

// TestBadInput: each breach of the rules is an ErrBadInput naming it.
func TestBadInput(t *testing.T) {
	for _, tc := range []struct {
		name, readme, waivers string
		checks                map[string][]string
		want                  string
	}{
		{"untagged sentence", "A server MUST answer.\n", "", nil, "has no [req: id] tag"},
		{"untagged lower-case must", "A client must never loop. A server answers.\n", "", nil, "has no [req: id] tag"},
		{"untagged rule row", "| code | meaning |\n|---|---|\n| `x` | y |\n", "", nil, "rule-table row has no [req: id] tag"},
		{"twice", "It MUST be. [req: a.b]\n\nIt MUST go. [req: a.b]\n", "", nil, "tagged twice"},
		{"malformed tag", "It MUST be. [req: A_B]\n", "", nil, "is not a tag"},
		{"tag without key word", "It is. [req: a.b]\n", "", nil, "no key word"},
		{"waiver of unknown id", "It MUST be. [req: a.b]\n", "waivers:\n  - id: a.c\n    reason: r\n", nil, "waiver of a.c"},
		{"waiver without reason", "It MUST be. [req: a.b]\n", "waivers:\n  - id: a.b\n", nil, "needs an id and a reason"},
		{"check of unknown id", "It MUST be. [req: a.b]\n", "", map[string][]string{"protocol/healthz": {"a.c"}}, "names requirement a.c"},
		{"unknown check", "It MUST be. [req: a.b]\n", "", map[string][]string{"protocol/nope": {"a.b"}}, "is no check of the kit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := coverage.Build(specFS(tc.readme, tc.waivers), kitWith(tc.checks))
			if !errors.Is(err, coverage.ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrBadInput with %q", err, tc.want)
			}
		})
	}
}

// TestSentences: a tag belongs to the sentence whose full stop it
// follows; abbreviations and full stops in code spans end nothing; rule
// tables are known by their header; the RFC 2119 sentence is not one.
func TestSentences(t *testing.T) {
	readme := "The key words MUST and SHOULD are used as in RFC 2119.\n\n" +
		"Keys, e.g. `a.b. c`, MUST be\nsorted. [req: k.sorted] Titles are trimmed. Offsets never\ncross. [req: k.cross]\n\n" +
		"- a list item SHOULD hold one. [req: k.item]\n\n```\nnever parsed: MUST\n```\n\n" +
		"| code | meaning |\n|---|---|\n| `x` | y [req: k.row] |\n\n| other | table |\n|---|---|\n| a | b |\n" +
		"\nThe word `must` in code, and `[req: k.example]` there, are examples.\n"
	reqs, probs, err := coverage.ReadProse(specFS(readme, ""))
	if err != nil || len(probs) > 0 {
		t.Fatalf("err %v, problems %v", err, probs)
	}
	var got []string
	for _, r := range reqs {
		got = append(got, fmt.Sprintf("%s %s %s:%d", r.ID, r.Level, r.File, r.Line))
	}
	want := []string{"k.sorted MUST README.md:4", "k.cross MUST README.md:5", "k.item SHOULD README.md:7", "k.row MUST README.md:15"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("requirements:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
