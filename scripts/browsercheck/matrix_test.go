package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/subspace/kbkit/speckit/matrix"
	"github.com/subspace/kbkit/speckit/report"
)

// The matrix check fails on a page whose script did not run (the linked
// drill-down closed, diff lines not coloured), and on a wrong tier.
func TestCheckMatrixCanFail(t *testing.T) {
	var recs []report.Record
	for _, s := range []string{"commands", "tokenizer", "window", "planner"} {
		recs = append(recs, report.Record{ID: s + "/a", Suite: s, Verdict: report.VerdictPass})
	}
	bad := append([]report.Record{{ID: "commands/x", Suite: "commands", Verdict: report.VerdictFail, Diff: "-a\n+b"}}, recs...)
	m := matrix.Build([]matrix.Impl{{Name: "ref", Records: recs}, {Name: "broken", Records: bad}})
	m.Compare(matrix.Build(nil), "old.json")
	var b strings.Builder
	if err := m.HTML(&b); err != nil {
		t.Fatal(err)
	}
	raw := b.String()
	if _, err := checkMatrix(raw, "impl-0-commands", []string{"ref=complete", "broken=failing"}); err == nil || !strings.Contains(err.Error(), "not open") {
		t.Errorf("a page whose script did not run passed: %v", err)
	}
	// What the script does: open the drill-down, colour the diff.
	ran := strings.Replace(raw, `<details id="impl-0" data-impl="ref">`, `<details id="impl-0" data-impl="ref" open="">`, 1)
	ran = regexp.MustCompile(`<pre class="diff">[^<]*</pre>`).ReplaceAllString(ran, `<pre class="diff"><span class="del">-a</span><span class="ins">+b</span></pre>`)
	if msg, err := checkMatrix(ran, "impl-0-commands", []string{"ref=complete", "broken=failing"}); err != nil {
		t.Errorf("the rendered page failed: %v", err)
	} else {
		t.Log(msg)
	}
	if _, err := checkMatrix(ran, "impl-0-commands", []string{"ref=complete", "broken=partial"}); err == nil {
		t.Error("a wrong tier passed")
	}
}
