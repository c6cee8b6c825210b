package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// pendingPages are pages other work adds, linked from here before they
// land: a link to one is not reported while it is missing; once the page
// exists its links are checked as any other (and the test logs that the
// entry can go).
var pendingPages = map[string]string{}

// The documents whose links are held: the READMEs users read, the
// changelog, docs/ and spec/.
func documents(t *testing.T) []string {
	docs := []string{"README.md", "loadgen/README.md", "examples/k6/README.md", "js/kbcore/README.md", "testdata/vectors/README.md", "CHANGELOG.md"}
	for _, g := range []string{"docs/*.md", "spec/*.md"} {
		m, err := filepath.Glob(filepath.Join("..", g))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			docs = append(docs, strings.TrimPrefix(filepath.ToSlash(f), "../"))
		}
	}
	return docs
}

var (
	// [text](target) and ![alt](target); the target ends at a space
	// (a title follows) or the closing parenthesis.
	mdLink     = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	inlineCode = regexp.MustCompile("`[^`]*`")
	heading    = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	htmlAnchor = regexp.MustCompile(`<a (?:name|id)="([^"]+)"`)
)

// prose returns a page's lines outside fenced blocks, inline code
// removed: links inside code are examples, not links.
func prose(md string) []string {
	lines := outsideFences(md)
	for i, l := range lines {
		lines[i] = inlineCode.ReplaceAllString(l, "")
	}
	return lines
}

// outsideFences returns a page's lines, those of fenced blocks blank.
func outsideFences(md string) []string {
	var out []string
	in := false
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			in = !in
			out = append(out, "")
			continue
		}
		if in {
			out = append(out, "")
			continue
		}
		out = append(out, l)
	}
	return out
}

// slug is GitHub's anchor for a heading: lower case, punctuation but
// hyphens and underscores dropped, spaces as hyphens.
func slug(h string) string {
	h = strings.ReplaceAll(h, "`", "")
	h = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// anchors returns the anchors of a page: its headings' slugs (a repeated
// one numbered -1, -2, ... as GitHub does) and explicit <a name|id>.
func anchors(md string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for _, l := range outsideFences(md) {
		if m := heading.FindStringSubmatch(l); m != nil {
			s := slug(m[2])
			if n := seen[s]; n > 0 {
				out[fmt.Sprintf("%s-%d", s, n)] = true
			} else {
				out[s] = true
			}
			seen[s]++
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(l, -1) {
			out[m[1]] = true
		}
	}
	return out
}

// Every relative link of the documents resolves to a file or directory of
// the checkout, and every anchor to a heading of the page it names.
func TestLinksResolve(t *testing.T) {
	pages := map[string]string{}
	read := func(rel string) (string, bool) {
		if s, ok := pages[rel]; ok {
			return s, true
		}
		b, err := os.ReadFile(filepath.Join("..", rel))
		if err != nil {
			return "", false
		}
		pages[rel] = string(b)
		return string(b), true
	}
	missing := map[string]bool{}
	for page := range pendingPages {
		if _, err := os.Stat(filepath.Join("..", page)); err == nil {
			t.Logf("%s exists now: its entry in pendingPages can go", page)
		} else {
			missing[page] = true
		}
	}
	checked := 0
	for _, doc := range documents(t) {
		md, ok := read(doc)
		if !ok {
			t.Errorf("%s: cannot read", doc)
			continue
		}
		for n, l := range prose(md) {
			for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				file, anchor, _ := strings.Cut(target, "#")
				rel := doc
				if file != "" {
					rel = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(doc), file)))
				}
				if strings.HasPrefix(rel, "../") {
					t.Errorf("%s:%d: %s leaves the repository", doc, n+1, target)
					continue
				}
				if missing[rel] {
					continue
				}
				if _, err := os.Stat(filepath.Join("..", rel)); err != nil {
					t.Errorf("%s:%d: %s: no such file (%s)", doc, n+1, target, rel)
					continue
				}
				if anchor == "" || !strings.HasSuffix(rel, ".md") {
					continue
				}
				body, _ := read(rel)
				if !anchors(body)[anchor] {
					t.Errorf("%s:%d: %s: %s has no heading with anchor #%s", doc, n+1, target, rel, anchor)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found: the extractor is broken")
	}
}

func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		"`kbkit spec fuzz`: what the cases miss":   "kbkit-spec-fuzz-what-the-cases-miss",
		"11. Notes for implementers":               "11-notes-for-implementers",
		"The reference server against the machine": "the-reference-server-against-the-machine",
		"A real run (stdout)":                      "a-real-run-stdout",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
	a := anchors("# A\n## A\n```\n# not a heading\n```\n<a name=\"x\"></a>\n")
	if !a["a"] || !a["a-1"] || a["not-a-heading"] || !a["x"] {
		t.Errorf("anchors: %v", a)
	}
}
