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

// The READMEs are manuals: the top two short enough to read, and no
// section of any README.md of the repository or of docs/ is a dated entry
// of a lab notebook (measured runs are
// results files under loadgen/results and pgfault/results).
func TestReadmesAreManuals(t *testing.T) {
	limits := map[string]int{"README.md": 300, "loadgen/README.md": 400}
	pages, _ := filepath.Glob("*.md")
	for _, p := range pages {
		limits["docs/"+p] = 0
	}
	for _, r := range readmes(t, "..") {
		if _, ok := limits[r]; !ok {
			limits[r] = 0
		}
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

// readmes returns every README.md of the checkout under root, relative
// to it, node_modules and hidden directories left out.
func readmes(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && d.Name() == "README.md" {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 3 {
		t.Fatalf("%d READMEs found under %s: the walk is broken", len(out), root)
	}
	return out
}

func TestDatedHeadings(t *testing.T) {
	md := "# kbkit\n### Where it stands (1 December 2026)\n## Run of 2026-12-06\n## December 3, 2026\n```\n# 4 May 2026 in a block\n```\n## Version 2026 notes\n"
	got := datedHeadings(md)
	if len(got) != 3 {
		t.Errorf("dated headings: %q, want the three dated ones", got)
	}
}

// kits are the directories whose first-level subpackages
// docs/architecture.md names one by one.
var kits = []string{"sim", "speckit", "wiresuite", "pgfault", "loadgen", "bench", "selftest", "server"}

// hasGo reports whether dir holds a Go file, directly or (deep) below it;
// testdata, node_modules and hidden directories do not count, as the go
// command ignores them.
func hasGo(dir string, deep bool) bool {
	found := false
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || found {
			return filepath.SkipAll
		}
		if d.IsDir() {
			n := d.Name()
			if p != dir && (!deep || n == "testdata" || n == "node_modules" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		found = strings.HasSuffix(p, ".go")
		return nil
	})
	return found
}

// unnamedPackages returns the top-level directories holding Go packages
// and the kits' first-level packages (both found under root) that the
// architecture page does not name: a directory as `dir/` or `dir`, a
// kit's package as `kit/sub` anywhere or as `sub` in the kit's row of
// the table. n is how many it looked for.
func unnamedPackages(root, page string) (missing []string, n int, err error) {
	top, err := os.ReadDir(root)
	if err != nil {
		return nil, 0, err
	}
	rows := map[string]string{}
	for _, l := range strings.Split(page, "\n") {
		for _, k := range kits {
			if strings.HasPrefix(l, "| `"+k+"/` |") {
				rows[k] = l
			}
		}
	}
	named := func(text, name string) bool {
		return strings.Contains(text, "`"+name+"`") || strings.Contains(text, "`"+name+"/")
	}
	for _, d := range top {
		if !d.IsDir() || strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || !hasGo(filepath.Join(root, d.Name()), true) {
			continue
		}
		n++
		if !named(page, d.Name()) {
			missing = append(missing, d.Name()+"/")
		}
	}
	for _, k := range kits {
		subs, err := os.ReadDir(filepath.Join(root, k))
		if err != nil {
			return nil, 0, err
		}
		for _, s := range subs {
			if !s.IsDir() || s.Name() == "testdata" || !hasGo(filepath.Join(root, k, s.Name()), false) {
				continue
			}
			n++
			if !named(page, k+"/"+s.Name()) && !named(rows[k], s.Name()) {
				missing = append(missing, k+"/"+s.Name())
			}
		}
	}
	return missing, n, nil
}

// docs/architecture.md names every top-level directory that holds Go
// packages and every package of a kit, as the file system has them.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	b, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	missing, n, err := unnamedPackages("..", string(b))
	if err != nil {
		t.Fatal(err)
	}
	if n < len(kits) {
		t.Fatalf("found %d packages to look for: the walk is broken", n)
	}
	for _, m := range missing {
		t.Errorf("docs/architecture.md does not name %s: add it to the table of packages", m)
	}
}

// The check itself: a package the page leaves out is reported.
func TestArchitectureCheckFindsAnUnnamedPackage(t *testing.T) {
	root := t.TempDir()
	for _, d := range append([]string{"newtop", "sim/named", "sim/unnamed", "sim/testdata/x"}, kits...) {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"newtop/a.go", "sim/named/a.go", "sim/unnamed/a.go", "sim/testdata/x/a.go"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("package a\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	missing, _, err := unnamedPackages(root, "| `sim/` | the simulator; `named` |\n")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(missing, " ") != "newtop/ sim/unnamed" {
		t.Errorf("unnamed: %q, want [newtop/ sim/unnamed]", missing)
	}
}
