package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMixedGroup(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mixed := write("mixed.go", "package p\n\nimport (\n\t\"fmt\"\n\t\"github.com/x/y\"\n)\n")
	split := write("split.go", "package p\n\nimport (\n\t\"fmt\"\n\n\t// the module's\n\t\"github.com/x/y\"\n)\n")
	single := write("single.go", "package p\n\nimport \"fmt\"\n")
	bad, err := check([]string{mixed, split, single})
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) != 1 || !strings.HasPrefix(bad[0], mixed+":4:") {
		t.Fatalf("got %q, want one report for %s:4", bad, mixed)
	}
}
