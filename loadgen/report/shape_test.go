package report

import (
	"strings"
	"testing"
)

// Runs of different shape are named as such in the text and on the page;
// runs of one shape are compared without a word.
func TestCompareWarnsAboutShape(t *testing.T) {
	a, b := sample(), sampleScaled(2)
	if d := ShapeDiff(a, b); len(d) != 0 {
		t.Fatalf("one shape: %v", d)
	}
	b.Run.Editors, b.Run.Server = 10, "http://10.0.0.9:8080"
	d := ShapeDiff(a, b)
	if strings.Join(d, "; ") != "editors 20 vs 10; target embedded <&> vs http://10.0.0.9:8080" {
		t.Errorf("ShapeDiff: %q", d)
	}
	var text, page strings.Builder
	if err := CompareText(&text, "a.json", a, "b.json", b); err != nil {
		t.Fatal(err)
	}
	if err := CompareHTML(&page, "a.json", a, "b.json", b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "warning: the runs differ in shape (editors 20 vs 10, target") {
		t.Errorf("text lacks the warning:\n%s", text.String())
	}
	if !strings.Contains(page.String(), `<p class="fail" id="shape">The runs differ in shape (editors 20 vs 10, target embedded &lt;&amp;&gt; vs`) {
		t.Error("page lacks the warning")
	}
}

// The per-type table fits 80 columns; the page's scrolls inside its box
// rather than widening the page.
func TestTypeTableFits(t *testing.T) {
	r := sample()
	for _, typ := range []string{"restore-page", "set-outputs"} {
		ts := *r.Types["edit-text"]
		ts.Counts.Commands, ts.Counts.Committed, ts.Counts.Rejections = 123456, 123456, 12345
		r.Types[typ] = &ts
	}
	var b strings.Builder
	if err := Text(&b, r); err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(b.String(), "\nby type")
	if !ok {
		t.Fatalf("no per-type table:\n%s", b.String())
	}
	table, _, _ = strings.Cut("by type"+table, "\n\n")
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, "cpu ") || strings.HasPrefix(line, "editors ") {
			break
		}
		if n := len([]rune(line)); n > 80 {
			t.Errorf("%d columns: %q", n, line)
		}
	}
	var page strings.Builder
	if err := HTML(&page, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), `<div class="wide"><table class="types">`) {
		t.Error("the page's per-type table is not in its scrolling box")
	}
}

// Rejections on a shared page are explained as decisions.
func TestRejectionNote(t *testing.T) {
	r := sample()
	if RejectionNote(r) != "" {
		t.Error("a note without rejections")
	}
	r.Rejections = map[string]int64{"node-not-found": 1344}
	var b, page strings.Builder
	if err := Text(&b, r); err != nil {
		t.Fatal(err)
	}
	if err := HTML(&page, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "(expected with 20 windows per page: an editor's command names a node another editor deleted") ||
		!strings.Contains(page.String(), `id="rejection-note"`) {
		t.Errorf("no note:\n%s", b.String())
	}
	r.Run.WindowsPerPage = 1
	if RejectionNote(r) != "" {
		t.Error("a note for windows alone on their pages")
	}
}
