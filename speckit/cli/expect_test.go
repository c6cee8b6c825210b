package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/subspace/kbkit/internal/cliutil"
	"github.com/subspace/kbkit/speckit/cases"
)

// plantedTwo is planted with a second divergence: the label of a text
// whose length in bytes is a multiple of 7 is "seven".
type plantedTwo struct{ planted }

func (p plantedTwo) Tokenize(ctx context.Context, req cases.TokenizeRequest) (cases.TokenizeReply, error) {
	r, err := p.planted.Tokenize(ctx, req)
	if err == nil && req.Text != nil && len(*req.Text) > 0 && len(*req.Text)%7 == 0 {
		r.Label = json.RawMessage(`"seven"`)
	}
	return r, err
}

// spec fuzz --expect by signature, against the broken Node adapter
// (edit-text drops the last character of texts longer than three) and the
// example Node adapter it is built on (no difference).
func TestSpecFuzzExpect(t *testing.T) {
	needNode(t)
	const brk, good = "node ../adapters/broken/adapter.mjs", "node ../adapters/node/adapter.mjs"
	expected := cliutil.WriteExpectations(t, `{id: "edit-text/fuzz:doc", status: fail, reason: "drops a character"}`)
	flaky := cliutil.WriteExpectations(t, `{id: "edit-text/fuzz:*", status: known_flaky, reason: "sometimes"}`)
	other := cliutil.WriteExpectations(t, `{id: "tokenizer/fuzz:text:refs", status: known_flaky, reason: "sometimes"}`)
	for _, tc := range []struct {
		name, impl, expect string
		code               int
		want               []string
	}{
		{"no file", brk, "", cliutil.ExitFailed, []string{"signature: edit-text/fuzz:doc\n",
			"  - {id: \"edit-text/fuzz:doc\", status: fail, reason: \"...\"}\n"}},
		{"expected", brk, expected, cliutil.ExitOK, []string{"0 difference(s)",
			`expectation "edit-text/fuzz:doc": expected failure: drops a character (` + expected + ":3, "}},
		{"unexpected", brk, other, cliutil.ExitFailed, []string{"signature: edit-text/fuzz:doc\n",
			`expectation "tokenizer/fuzz:text:refs": known flaky, passed: sometimes (` + other + ":3; not seen in 400 inputs)"}},
		{"stale", good, expected, cliutil.ExitFailed, []string{"0 difference(s)",
			`expectation "edit-text/fuzz:doc": stale expectation: "edit-text/fuzz:doc" is expected to fail (drops a character) but passed; remove its entry (` + expected + ":3), or make it known_flaky if it fails only now and then (not seen in 400 inputs)"}},
		{"flaky, failing", brk, flaky, cliutil.ExitOK, []string{"0 difference(s)", `expectation "edit-text/fuzz:*": known flaky, failed: sometimes (` + flaky + ":3, "}},
		{"flaky, passing", good, flaky, cliutil.ExitOK, []string{"0 difference(s)", `expectation "edit-text/fuzz:*": known flaky, passed: sometimes`}},
	} {
		args := []string{"spec", "fuzz", "--impl", tc.impl, "--seed", "1", "--count", "400"}
		if tc.expect != "" {
			args = append(args, "--expect", tc.expect)
		}
		code, out, errOut := kbkit(t, "", args...)
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d\n%s\n%s", tc.name, code, tc.code, out, errOut)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: stdout lacks %q:\n%s", tc.name, w, out)
			}
		}
	}
}

// One tracked bug is silenced by its signature, and a new one is not:
// the planted tokenizer loses the last of several refs (of formulas, in
// this run) and labels some texts; the file expects the lost refs.
func TestSpecFuzzExpectOneBug(t *testing.T) {
	t.Setenv(envAdapter, "planted-two")
	x := cliutil.WriteExpectations(t, `{id: "tokenizer/fuzz:*:refs", status: fail, reason: "loses the last ref"}`)
	code, out, errOut := kbkit(t, "", "spec", "fuzz", "--impl", self(t), "--suite", "tokenizer", "--seed", "9", "--count", "600", "--expect", x)
	if code != cliutil.ExitFailed {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	for _, w := range []string{"signature: tokenizer/fuzz:text:label\n", `expectation "tokenizer/fuzz:*:refs": expected failure: loses the last ref (`} {
		if !strings.Contains(out, w) {
			t.Errorf("stdout lacks %q:\n%s", w, out)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "  - {id: ") && strings.Contains(l, ":refs") {
			t.Errorf("the expected signature is offered again: %s\n%s", l, out)
		}
	}
}

// A bad spec fuzz expectations file is refused before the adapter starts.
func TestSpecFuzzExpectRefused(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{cliutil.WriteExpectations(t, `{id: "edit-text/fuzz:dco", status: fail, reason: x}`), `expect.yaml:3: "edit-text/fuzz:dco" is no spec case id or spec fuzz signature`},
		{cliutil.WriteExpectations(t, `{id: "edit-text/fuzz-1a2b3c4d", status: fail, reason: x}`), `expect.yaml:3: "edit-text/fuzz-1a2b3c4d" is no spec case id or spec fuzz signature`},
		{cliutil.WriteExpectations(t, `{id: "window/fuzz:*:nothing", status: fail, reason: x}`), `expect.yaml:3: "window/fuzz:*:nothing" matches no spec case id or spec fuzz signature`},
		{cliutil.WriteExpectations(t, `{id: "edit-text/fuzz:doc", status: skip, reason: x}`), `status skip applies to inputs, not to a difference's signature`},
		{cliutil.WriteExpectations(t, `{id: "edit-text/fuzz:doc", status: fail, reason: x, server: a}`), `client and server narrow entries of kbkit conformance run only`},
	} {
		code, out, errOut := kbkit(t, "", "spec", "fuzz", "--impl", "kbkit-no-such-adapter", "--count", "10", "--expect", tc.file)
		if code != cliutil.ExitErrored || out != "" || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "starting the adapter") {
			t.Errorf("exit %d, want 2; stdout %q; stderr lacks %q:\n%s", code, out, tc.want, errOut)
		}
	}
}

// spec run: a known_flaky case fails or passes without failing the run,
// and the report says which; the planted adapter fails the tokenizer
// cases with two refs or more, the reference passes them.
func TestSpecRunKnownFlaky(t *testing.T) {
	x := cliutil.WriteExpectations(t, `{id: "tokenizer/*", status: known_flaky, reason: "sometimes"}`)
	run := func(planted bool) (int, string, string) {
		if planted {
			t.Setenv(envAdapter, "planted")
		} else {
			t.Setenv(envAdapter, "")
		}
		return kbkit(t, "", "spec", "run", "--suite", "tokenizer", "--impl", self(t)+" adapter", "--expect", x)
	}
	code, out, errOut := run(true)
	if code != cliutil.ExitOK || !strings.Contains(out, " # TODO known flaky, failed: sometimes\n") || !strings.Contains(out, "failed, known flaky") {
		t.Errorf("failing: exit %d, want 0\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = run(false)
	if code != cliutil.ExitOK || !strings.Contains(out, "\n# known flaky, passed: sometimes\n") || strings.Contains(out, "not ok") {
		t.Errorf("passing: exit %d, want 0\n%s\n%s", code, out, errOut)
	}
}
