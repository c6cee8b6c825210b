package release

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// notes runs scripts/release-notes.sh on the fixture changelog.
func notes(t *testing.T, version string) (code int, stdout, stderr string) {
	t.Helper()
	return runBash(t, "", filepath.Join(root, "scripts/release-notes.sh"), "testdata/CHANGELOG.md", version)
}

// runBash runs bash with args in dir ("": the test's own directory): its
// exit status and output; a failure to start it fails the test.
func runBash(t *testing.T, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command("bash", args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errb.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, out.String(), errb.String()
}

func TestReleaseNotesCutOneSection(t *testing.T) {
	for _, tc := range []struct {
		version, want string
	}{
		{"0.2.0", "# kbkit 0.2.0 (2026-12-20)\n\n### Added\n\n- case `tokenizer/label-nfc` (spec_version 2)\n\n### What an implementer must do\n\n- accept protocol 2\n"},
		{"0.1.1", "# kbkit 0.1.1 (2026-12-09)\n\n- patch 0.1.1; not the section of 0.1.10 nor of 0.1.10-rc.1\n"},
		// The last section ends before the footer of version links.
		{"0.1.0", "# kbkit 0.1.0 (2026-12-07)\n\nFirst release.\n"},
	} {
		code, out, errs := notes(t, tc.version)
		if code != 0 || out != tc.want {
			t.Errorf("%s: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", tc.version, code, errs, out, tc.want)
		}
	}
}

// A release without its notes fails, saying what to write, and prints
// nothing a caller could mistake for notes.
func TestReleaseNotesRefuse(t *testing.T) {
	for _, tc := range []struct{ version, why string }{
		{"0.4.0", `has no section "## [0.4.0] - YYYY-MM-DD"`},
		{"0.3.0", "has no date"},
		{"0.1.10", "is empty"},
		{"Unreleased", "is not X.Y.Z"},
		{"0.2", "is not X.Y.Z"},
	} {
		code, out, errs := notes(t, tc.version)
		if code != 1 || out != "" || !strings.Contains(errs, tc.why) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 saying %q", tc.version, code, out, errs, tc.why)
		}
	}
	cmd := exec.Command("bash", filepath.Join(root, "scripts/release-notes.sh"), "testdata/NO-CHANGELOG.md", "0.1.0")
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || len(out) != 0 || !strings.Contains(string(ee.Stderr), "does not exist") {
		t.Errorf("a missing changelog: %v, stdout %q", err, out)
	}
}
