package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeServer answers every request with a kb.whoami: the preflight and
// protocol/whoami pass, protocol/page-not-found fails.
func fakeServer(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer good" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"message":"unknown device token","code":-32001,"data":{"code":"UNAUTHORIZED","httpStatus":401}}}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"result":{"data":{"workspace_id":"00000000-0000-0000-0000-000000000001","device_id":"00000000-0000-0000-0000-000000000002"}}}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestConformanceProtocolCLI(t *testing.T) {
	url := fakeServer(t)
	dir := t.TempDir()
	junit, jsonl := filepath.Join(dir, "p.xml"), filepath.Join(dir, "p.jsonl")

	code, out, errs := kbkit(t, "", "conformance", "protocol", "--server", url, "--token", "good",
		"--run", `^protocol/(whoami|page-not-found|cross-workspace)$`, "--junit", junit, "--json", jsonl)
	if code != exitFailed {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, exitFailed, errs)
	}
	for _, want := range []string{"TAP version 14\n1..3\n", "ok 1 - protocol/whoami\n", "not ok 2 - protocol/page-not-found\n",
		"  expected: HTTP 404 NOT_FOUND\n", "  got: HTTP 200\n", "ok 3 - protocol/cross-workspace # SKIP needs --other-token",
		"# 3 checks: 1 passed, 1 failed, 1 skipped\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if b, err := os.ReadFile(junit); err != nil || !strings.Contains(string(b), `tests="3" failures="1" errors="0" skipped="1"`) {
		t.Errorf("JUnit (%v):\n%s", err, b)
	}
	if b, err := os.ReadFile(jsonl); err != nil || strings.Count(string(b), "\n") != 3 || !strings.Contains(string(b), `"id":"protocol/page-not-found","description"`) {
		t.Errorf("JSON lines (%v):\n%s", err, b)
	}

	code, out, _ = kbkit(t, "", "conformance", "protocol", "--server", url, "--token", "good", "--run", `^protocol/whoami$`)
	if code != exitOK || !strings.Contains(out, "ok 1 - protocol/whoami\n") {
		t.Errorf("only passing checks: exit %d\n%s", code, out)
	}

	// A skip passes, named on stderr; under --strict it fails the run.
	skipArgs := []string{"conformance", "protocol", "--server", url, "--token", "good", "--run", `^protocol/(whoami|cross-workspace|reconnect)$`}
	code, out, errs = kbkit(t, "", skipArgs...)
	if code != exitOK || !strings.Contains(errs, "skipped protocol/cross-workspace: needs --other-token") ||
		!strings.Contains(errs, "skipped protocol/reconnect: needs --restart-command or --restart-url") {
		t.Errorf("skips: exit %d, want %d; stderr:\n%s", code, exitOK, errs)
	}
	code, out, errs = kbkit(t, "", append(skipArgs, "--strict")...)
	if code != exitFailed || !strings.Contains(out, "not ok 2 - protocol/cross-workspace\n") ||
		!strings.Contains(out, "# not ok (2):\n#   protocol/cross-workspace\n#   protocol/reconnect\n") {
		t.Errorf("--strict: exit %d, want %d\n%s\n%s", code, exitFailed, out, errs)
	}
	// A restart hook that fails: protocol/reconnect runs, and fails.
	code, out, _ = kbkit(t, "", "conformance", "protocol", "--server", url, "--token", "good", "--run", `^protocol/reconnect$`,
		"--restart-url", url+"/no-restart-here", "--event-timeout", "1s")
	if code != exitFailed || !strings.Contains(out, "not ok 1 - protocol/reconnect\n") {
		t.Errorf("--restart-url: exit %d, want %d\n%s", code, exitFailed, out)
	}

	// Could not run.
	for _, args := range [][]string{
		{"--server", url, "--token", "bad"},
		{"--server", "http://127.0.0.1:1", "--token", "good"},
		{"--token", "good"},
		{"--server", url, "--token", "good", "--run", "("},
		{"--server", url, "--token", "good", "--run", "no-such-check"},
		{"--server", url, "--token", "good", "--restart-command", "true", "--restart-url", url},
	} {
		code, out, errs := kbkit(t, "", append([]string{"conformance", "protocol"}, args...)...)
		if code != exitErrored || out != "" || !strings.Contains(errs, "kbkit conformance protocol: ") {
			t.Errorf("%q: exit %d, want %d; stdout %q, stderr %q", args, code, exitErrored, out, errs)
		}
	}

	code, out, _ = kbkit(t, "", "conformance", "protocol", "--list")
	if code != exitOK || !strings.Contains(out, "protocol/reconnect") || !strings.Contains(out, "protocol/gapless-concurrent") {
		t.Errorf("--list: exit %d\n%s", code, out)
	}
}
