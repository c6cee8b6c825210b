package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/subspace/kbkit/internal/cliutil"
	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/target"
)

// --expect against the reference server on Postgres, plain and behind
// sim/broken's non-canonical-page proxy (kb.page documents out of
// canonical order), which fails the projection checker and no other in
// seed 0.
func TestConformanceRunExpect(t *testing.T) {
	ctx := context.Background()
	e, err := target.NewEmbedded(ctx, pgprovider.ForTest(t), target.EmbeddedOptions{Instances: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	toks, err := e.Devices(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	url := e.Endpoints()[0]
	run := func(broken, expect string) (int, string, string) {
		args := []string{"conformance", "run", "--server", url, "--token", toks[0], "--token", toks[1],
			"--seeds", "1", "--shrink=false", "--reruns", "0", "--expect", expect}
		if broken != "" {
			args = append(args, "--broken-server", broken)
		}
		return kbkit(t, "", args...)
	}
	const brk = "non-canonical-page"
	narrowed := cliutil.WriteExpectations(t, `{id: projection, status: fail, reason: "pages out of order", server: `+brk+`}`)
	anyRun := cliutil.WriteExpectations(t, `{id: projection, status: fail, reason: "pages out of order"}`)
	flaky := cliutil.WriteExpectations(t, `{id: "proj*", status: known_flaky, reason: "sometimes"}`)
	other := cliutil.WriteExpectations(t, `{id: convergence, status: known_flaky, reason: "sometimes"}`)
	for _, tc := range []struct {
		name, broken, expect string
		code                 int
		want                 []string
	}{
		{"expected failure", brk, narrowed, exitOK, []string{"checker projection: expected failure: pages out of order (" + narrowed + ":3); failing seeds: 0\n"}},
		{"unexpected failure", brk, other, exitFailed, []string{"checker convergence: known flaky, passed: sometimes\n", "seed 0 FAILED"}},
		{"stale", "", anyRun, exitFailed, []string{`checker projection: stale expectation: "projection" is expected to fail (pages out of order) but passed; remove its entry (` + anyRun + ":3)"}},
		{"narrowed to another server", "", narrowed, exitOK, nil},
		{"flaky, failing", brk, flaky, exitOK, []string{"checker projection: known flaky, failed: sometimes (" + flaky + ":3); failing seeds: 0\n"}},
		{"flaky, passing", "", flaky, exitOK, []string{"checker projection: known flaky, passed: sometimes\n"}},
	} {
		code, out, errs := run(tc.broken, tc.expect)
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d\n%s\n%s", tc.name, code, tc.code, out, errs)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: stdout lacks %q:\n%s", tc.name, w, out)
			}
		}
		if tc.want == nil && strings.Contains(out, "checker projection:") {
			t.Errorf("%s: an entry for another server was judged:\n%s", tc.name, out)
		}
	}
}

// A bad expectations file is refused before any seed runs (exit 2).
func TestConformanceRunExpectRefused(t *testing.T) {
	url := fakeServer(t)
	for _, tc := range []struct{ file, want string }{
		{cliutil.WriteExpectations(t, `{id: projektion, status: fail, reason: x}`), `expect.yaml:3: "projektion" is no simulator checker`},
		{cliutil.WriteExpectations(t, `{id: pending, status: fail, reason: x}`, `{id: "zz*", status: known_flaky, reason: x}`), `expect.yaml:4: "zz*" matches no simulator checker`},
		{cliutil.WriteExpectations(t, `{id: pending, status: skip, reason: x}`), "expect.yaml:3: \"pending\": status skip: a checker cannot be left out of a run"},
	} {
		code, out, errs := kbkit(t, "", "conformance", "run", "--server", url, "--token", "good", "--seeds", "1", "--expect", tc.file)
		if code != exitErrored || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("exit %d, want %d; stdout %q; stderr lacks %q:\n%s", code, exitErrored, out, tc.want, errs)
		}
	}
}
