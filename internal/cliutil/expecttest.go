package cliutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// WriteExpectations writes an expectations file (spec/EXPECTATIONS.md)
// holding entries, one YAML flow mapping each, into t's temporary
// directory, and returns its path: the --expect tests of every command
// share it.
func WriteExpectations(t testing.TB, entries ...string) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "expect.yaml")
	var b strings.Builder
	b.WriteString("spec_version: 1\nexpectations:\n")
	for _, e := range entries {
		b.WriteString("  - " + e + "\n")
	}
	if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}
