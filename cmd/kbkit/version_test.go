package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	code, out, errs := kbkit(t, "", "version")
	if code != exitOK || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{"kbkit ", "module        github.com/subspace/kbkit\n", "commit        ", "spec_version  1\n", "go            go1."} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = kbkit(t, "", "version", "--json")
	var v versionInfo
	if err := json.Unmarshal([]byte(out), &v); code != exitOK || err != nil || v.SpecVersion != 1 || v.Module != "github.com/subspace/kbkit" || v.Version == "" {
		t.Errorf("--json: exit %d, %v, %+v", code, err, v)
	}
	commit = "0123abc" // what the Makefile's -ldflags sets when the toolchain records no commit
	defer func() { commit = "" }()
	if v := buildVersion(); v.Commit == "" {
		t.Errorf("no commit with main.commit set: %+v", v)
	}
}
