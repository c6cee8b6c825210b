package main

import (
	"archive/zip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The zip holds the root module's files only: not a nested module's, not
// vendor/, not a symbolic link; the proxy files name the version.
func TestWriteServesTheRootModule(t *testing.T) {
	src := t.TempDir()
	for _, f := range []string{"go.mod", "a.go", "pkg/b.go", "k6/go.mod", "k6/c.go", "vendor/d.go", "docs/e.md"} {
		p := filepath.Join(src, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("module example.com/m\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a.go", filepath.Join(src, "link.go")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(src)
	out := t.TempDir()
	files := []string{"go.mod", "a.go", "pkg/b.go", "k6/go.mod", "k6/c.go", "vendor/d.go", "docs/e.md", "link.go"}
	if err := write("example.com/m", "v1.2.3", out, files); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(out, "example.com/m/@v")
	zr, err := zip.OpenReader(filepath.Join(dir, "v1.2.3.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var got []string
	for _, f := range zr.File {
		got = append(got, f.Name)
	}
	sort.Strings(got)
	want := "example.com/m@v1.2.3/a.go example.com/m@v1.2.3/docs/e.md example.com/m@v1.2.3/go.mod example.com/m@v1.2.3/pkg/b.go"
	if strings.Join(got, " ") != want {
		t.Errorf("zip holds %v, want %s", got, want)
	}
	for name, want := range map[string]string{"list": "v1.2.3\n", "v1.2.3.mod": "module example.com/m\n"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want %q", name, b, err, want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "v1.2.3.info")); err != nil || !strings.Contains(string(b), `"Version":"v1.2.3"`) {
		t.Errorf("v1.2.3.info: %s, %v", b, err)
	}
}
