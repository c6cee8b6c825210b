package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// dated matches a date as a diary heading writes it: "1 December 2026",
// "December 1, 2026" or "2026-12-01".
var dated = regexp.MustCompile(`(?i)\b(\d{1,2} (january|february|march|april|may|june|july|august|september|october|november|december)|(january|february|march|april|may|june|july|august|september|october|november|december) \d{1,2},?) \d{4}\b|\b\d{4}-\d{2}-\d{2}\b`)

// datedHeadings returns the headings of a page that carry a date.
func datedHeadings(md string) []string {
	var out []string
	for _, l := range outsideFences(md) {
		if strings.HasPrefix(l, "#") && dated.MatchString(l) {
			out = append(out, l)
		}
	}
	return out
}

// The READMEs are manuals: short enough to read, and no section of them
// or of docs/ is a dated entry of a lab notebook (measured runs are
// results files under loadgen/results and pgfault/results).
func TestReadmesAreManuals(t *testing.T) {
	limits := map[string]int{"README.md": 300, "loadgen/README.md": 400}
	pages, _ := filepath.Glob("*.md")
	for _, p := range pages {
		limits["docs/"+p] = 0
	}
	for name, most := range limits {
		b, err := os.ReadFile(filepath.Join("..", name))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), "\n"); most > 0 && n > most {
			t.Errorf("%s has %d lines: a manual of at most %d (move the rest into docs/)", name, n, most)
		}
		for _, h := range datedHeadings(string(b)) {
			t.Errorf("%s: a dated section %q: keep the run as a results file, not as prose", name, h)
		}
	}
}

func TestDatedHeadings(t *testing.T) {
	md := "# kbkit\n### Where it stands (1 December 2026)\n## Run of 2026-12-06\n## December 3, 2026\n```\n# 4 May 2026 in a block\n```\n## Version 2026 notes\n"
	got := datedHeadings(md)
	if len(got) != 3 {
		t.Errorf("dated headings: %q, want the three dated ones", got)
	}
}
