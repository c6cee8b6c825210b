package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/subspace/kbkit/internal/cliutil"
	"github.com/subspace/kbkit/speckit/matrix"
)

// TestSpecMatrix: three implementations in one command (the reference in
// process, the reference through the adapter protocol, the broken Node
// adapter), the page, the JSON and a badge each; then a spec run --json
// file merged and compared with the first matrix.
func TestSpecMatrix(t *testing.T) {
	needNode(t)
	dir := t.TempDir()
	out := func(n string) string { return filepath.Join(dir, n) }
	code, stdout, errOut := kbkit(t, "", "spec", "matrix", "--reference", "--impl", "self="+self(t)+" adapter",
		"--impl", "broken=node ../../speckit/adapters/broken/adapter.mjs",
		"--html", out("m.html"), "--json", out("m.json"), "--badges", out("badges"))
	if code != cliutil.ExitFailed {
		t.Fatalf("exit %d, want 1 (broken fails)\n%s\n%s", code, stdout, errOut)
	}
	for _, want := range []string{"\nreference ", " complete\n", "\nself ", "\nbroken ", " failing\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	page, err := os.ReadFile(out("m.html"))
	if err != nil || !strings.Contains(string(page), `<tr data-impl="broken" data-tier="failing">`) || !strings.Contains(string(page), `data-verdict="fail"`) {
		t.Errorf("page: %v", err)
	}
	var badge matrix.Endpoint
	b, err := os.ReadFile(out("badges/self.json"))
	if err != nil || json.Unmarshal(b, &badge) != nil || badge.SchemaVersion != 1 || !strings.HasPrefix(badge.Message, "complete · ") || badge.Color != "brightgreen" {
		t.Errorf("badge: %v %s", err, b)
	}

	// A saved run merged, compared with the matrix above.
	code, _, _ = kbkit(t, "", "spec", "run", "--impl", "node ../../speckit/adapters/broken/adapter.mjs", "--json", out("broken.json"))
	if code != cliutil.ExitFailed {
		t.Fatalf("spec run broken: exit %d", code)
	}
	code, stdout, errOut = kbkit(t, "", "spec", "matrix", "--results", "broken="+out("broken.json"), "--reference", "--compare", out("m.json"))
	if code != cliutil.ExitFailed || !strings.Contains(stdout, "changes since "+out("m.json")+": 1\n  removed implementation self") {
		t.Errorf("compare: exit %d\n%s\n%s", code, stdout, errOut)
	}
}

// Bad flags exit 2 and write nothing.
func TestSpecMatrixBadFlags(t *testing.T) {
	dir := t.TempDir()
	html := filepath.Join(dir, "m.html")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no implementation"},
		{[]string{"--impl", "node adapter.mjs"}, "want NAME=VALUE"},
		{[]string{"--impl", "x=  "}, "the value after x= is empty"},
		{[]string{"--impl", "../x=node a"}, "the name must be"},
		{[]string{"--reference", "--expect", "node=e.yaml"}, `no --impl or --reference is named "node"`},
		{[]string{"--reference", "--impl", "reference=kbkit adapter"}, `two implementations are named "reference"`},
		{[]string{"--reference", "--compare", filepath.Join(dir, "none.json")}, "--compare:"},
	} {
		code, out, errOut := kbkit(t, "", append([]string{"spec", "matrix", "--html", html}, tc.args...)...)
		if code != cliutil.ExitErrored || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q (want %q)", tc.args, code, out, errOut, tc.want)
		}
	}
	if _, err := os.Stat(html); err == nil {
		t.Error("a refused matrix wrote its page")
	}
	// A results file that is not one: the row is "not run", exit 2.
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("{}\n"), 0o644)
	code, out, _ := kbkit(t, "", "spec", "matrix", "--results", "x="+bad)
	if code != cliutil.ExitErrored || !strings.Contains(out, " not run\n  could not run: matrix: line 1") {
		t.Errorf("bad results: exit %d\n%s", code, out)
	}
}
