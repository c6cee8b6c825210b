package main

import (
	"encoding/json"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/subspace/kbkit/internal/version"
	"github.com/subspace/kbkit/speckit/adapter"
)

func TestVersion(t *testing.T) {
	code, out, errs := kbkit(t, "", "version")
	if code != exitOK || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{"kbkit " + version.Kit + "\n", "module        github.com/subspace/kbkit ", "commit        ",
		"spec_version  " + strconv.Itoa(version.Spec) + "\n", "adapter       protocol 1 to " + strconv.Itoa(adapter.Protocol) + "\n", "go            go1."} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = kbkit(t, "", "version", "--json")
	var v versionInfo
	if err := json.Unmarshal([]byte(out), &v); code != exitOK || err != nil || v.Kit != version.Kit || v.SpecVersion != version.Spec ||
		v.Protocol != adapter.Protocol || v.Module != "github.com/subspace/kbkit" || v.Version == "" {
		t.Errorf("--json: exit %d, %v, %+v", code, err, v)
	}
	// --short is what scripts read: the version alone.
	if code, out, _ = kbkit(t, "", "version", "--short"); code != exitOK || out != version.Kit+"\n" {
		t.Errorf("--short: exit %d, %q, want %q", code, out, version.Kit+"\n")
	}
	commit = "0123abc" // what the Makefile's -ldflags sets when the toolchain records no commit
	defer func() { commit = "" }()
	if v := buildVersion(); v.Commit == "" {
		t.Errorf("no commit with main.commit set: %+v", v)
	}
}

// A build from a checkout prints (devel), as the README shows, not the
// pseudo-version the toolchain derives from the commit; a release tag and
// `go install module@version` (no VCS stamp) keep their version.
func TestVersionOfCheckout(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "7a81c93dd3a8a8e131e9bf9144ff692d680f28e0"}, {Key: "vcs.time", Value: "2026-12-02T03:54:18Z"}}
	for _, tc := range []struct {
		version string
		stamped bool
		want    string
	}{
		{"v0.0.0-20261202035418-7a81c93dd3a8", true, "(devel)"},
		{"v0.0.0-20261202035418-7a81c93dd3a8+dirty", true, "(devel)"},
		{"v1.2.4-0.20261202035418-7a81c93dd3a8", true, "(devel)"},
		{"v1.3.0-rc.1.0.20261202035418-7a81c93dd3a8", true, "(devel)"},
		{"v1.2.3+dirty", true, "(devel)"},
		{"v1.2.3", true, "v1.2.3"},
		{"(devel)", false, "(devel)"},
		{"v0.0.0-20261202035418-7a81c93dd3a8", false, "v0.0.0-20261202035418-7a81c93dd3a8"},
	} {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/subspace/kbkit", Version: tc.version}}
		if tc.stamped {
			bi.Settings = vcs
		}
		if got := versionOf(bi).Version; got != tc.want {
			t.Errorf("%s (stamped %v): %s, want %s", tc.version, tc.stamped, got, tc.want)
		}
	}
}

// A tagged build whose tag is not kbkit's version (a release cut without
// changing internal/version) says so.
func TestVersionTagMismatch(t *testing.T) {
	for _, tc := range []struct {
		module string
		note   bool
	}{{"(devel)", false}, {"v" + version.Kit, false}, {"v9.9.9", true}} {
		var b strings.Builder
		v := versionInfo{Kit: version.Kit, SpecVersion: version.Spec, Protocol: adapter.Protocol, Module: "github.com/subspace/kbkit", Version: tc.module}
		if err := printVersion(&b, v, false); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), "(not the tag v"+version.Kit); got != tc.note {
			t.Errorf("module version %s: note %v, want %v:\n%s", tc.module, got, tc.note, b.String())
		}
	}
}

// --short prints version.Kit alone: what make release compares with the
// version it releases.
func TestVersionShort(t *testing.T) {
	code, out, errs := kbkit(t, "", "version", "--short")
	if code != exitOK || errs != "" || out != version.Kit+"\n" {
		t.Errorf("exit %d, stdout %q, stderr %q; want %q", code, out, errs, version.Kit)
	}
	if code, _, _ := kbkit(t, "", "version", "--short", "--json"); code != exitErrored {
		t.Errorf("--short --json: exit %d, want %d", code, exitErrored)
	}
}
