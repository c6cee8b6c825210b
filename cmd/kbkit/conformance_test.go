package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConformanceRunHTMLFlags: bad --html, --html-all and --broken-server
// input is refused up front (exit 2) and writes nothing.
func TestConformanceRunHTMLFlags(t *testing.T) {
	url := fakeServer(t)
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--html-all"}, "--html-all needs --html DIR"},
		{[]string{"--html", filepath.Join(file, "tl")}, "--html:"},
		{[]string{"--broken-server", "nope"}, `no broken-server variant "nope" (one of double-echo, drop-derived, reorder, skip-dedup)`},
	} {
		args := append([]string{"conformance", "run", "--server", url, "--token", "good", "--seeds", "1"}, tc.args...)
		code, out, errs := kbkit(t, "", args...)
		if code != exitErrored || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q (want %q)\n%s", tc.args, code, errs, tc.want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(file, "tl")); err == nil {
		t.Error("a refused --html made its directory")
	}
}
