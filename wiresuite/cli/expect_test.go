package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/subspace/kbkit/internal/cliutil"
	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/sim/broken"
	"github.com/subspace/kbkit/target"
)

// --expect against a real server: the reference server on Postgres, and
// the same behind sim/broken's no-duplicate-flag proxy (a retried
// committed id is answered without duplicate: true), which fails
// protocol/retry-committed and nothing else of the checks run here.
func TestProtocolExpect(t *testing.T) {
	ctx := context.Background()
	e, err := target.NewEmbedded(ctx, pgprovider.ForTest(t), target.EmbeddedOptions{Instances: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	toks, err := e.Devices(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	bad, stop, err := broken.New(e, "no-duplicate-flag")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	good, brk := e.Endpoints()[0], bad.Endpoints()[0]
	run := func(url string, expect string) (int, string, string) {
		args := []string{"conformance", "protocol", "--server", url, "--token", toks[0], "--run", `^protocol/(whoami|retry-committed)$`}
		if expect != "" {
			args = append(args, "--expect", expect)
		}
		return kbkit(t, "", args...)
	}
	expectFail := cliutil.WriteExpectations(t, `{id: protocol/retry-committed, status: fail, reason: "no duplicate flag yet"}`)
	flaky := cliutil.WriteExpectations(t, `{id: "protocol/retry-*", status: known_flaky, reason: "sometimes"}`)
	other := cliutil.WriteExpectations(t, `{id: protocol/whoami, status: known_flaky, reason: "sometimes"}`)

	for _, tc := range []struct {
		name, url, expect string
		code              int
		want              []string
	}{
		{"no file: the failure fails the run", brk, "", exitFailed, []string{"not ok 2 - protocol/retry-committed\n"}},
		{"expected failure", brk, expectFail, exitOK, []string{"not ok 2 - protocol/retry-committed # TODO expected failure: no duplicate flag yet: ",
			"1 failed as expected"}},
		{"unexpected failure", brk, other, exitFailed, []string{"ok 1 - protocol/whoami\n# protocol/whoami: known flaky, passed: sometimes\n",
			"not ok 2 - protocol/retry-committed\n"}},
		{"stale", good, expectFail, exitFailed, []string{"not ok 2 - protocol/retry-committed\n",
			`stale expectation: "protocol/retry-committed" is expected to fail (no duplicate flag yet) but passed; remove its entry (` + expectFail + `:3)`,
			"# not ok (1):\n#   protocol/retry-committed\n"}},
		{"flaky, failing", brk, flaky, exitOK, []string{"not ok 2 - protocol/retry-committed # TODO known flaky, failed: sometimes: "}},
		{"flaky, passing", good, flaky, exitOK, []string{"ok 2 - protocol/retry-committed\n# protocol/retry-committed: known flaky, passed: sometimes\n"}},
	} {
		code, out, errs := run(tc.url, tc.expect)
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d\n%s\n%s", tc.name, code, tc.code, out, errs)
		}
		all := out + errs
		for _, w := range tc.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s: the output lacks %q:\n%s\n%s", tc.name, w, out, errs)
			}
		}
	}
}

// A bad expectations file is refused before any check runs: exit 2,
// nothing on stdout, the entry's line on stderr.
func TestProtocolExpectRefused(t *testing.T) {
	url := fakeServer(t)
	malformed := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(malformed, []byte("spec_version: 1\nexpectations:\n  - {id: protocol/whoami, status: sometimes, reason: x}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, want string }{
		{cliutil.WriteExpectations(t, `{id: protocol/no-such-check, status: fail, reason: x}`), `expect.yaml:3: "protocol/no-such-check" is no protocol check`},
		{cliutil.WriteExpectations(t, `{id: protocol/whoami, status: fail, reason: x}`, `{id: "protocol/nothing-*", status: skip, reason: x}`), `expect.yaml:4: "protocol/nothing-*" matches no protocol check`},
		{cliutil.WriteExpectations(t, `{id: protocol/whoami, status: fail, reason: x, client: "node a.mjs"}`), "client and server narrow entries of kbkit conformance run only"},
		{malformed, "bad.yaml:3: at /expectations/0/status: value must be one of 'fail', 'skip', 'known_flaky'"},
	} {
		code, out, errs := kbkit(t, "", "conformance", "protocol", "--server", url, "--token", "good", "--run", "^protocol/whoami$", "--expect", tc.file)
		if code != exitErrored || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("exit %d, want %d; stdout %q; stderr lacks %q:\n%s", code, exitErrored, out, tc.want, errs)
		}
	}
}
