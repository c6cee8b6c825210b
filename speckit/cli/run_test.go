package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/subspace/kbkit/internal/cliutil"
	"github.com/subspace/kbkit/internal/version"
	"github.com/subspace/kbkit/speckit/adapter"
	"github.com/subspace/kbkit/speckit/cases"
)

// The test binary doubles as kbkit (for `--impl "<test binary> adapter"`)
// and as a misbehaving adapter; children inherit the environment.
const (
	envMain    = "KBKIT_TEST_MAIN"
	envAdapter = "KBKIT_TEST_ADAPTER"
)

func TestMain(m *testing.M) {
	if os.Getenv(envAdapter) == "planted" {
		_ = adapter.Serve(context.Background(), os.Stdin, os.Stdout, planted{})
		os.Exit(0)
	}
	if os.Getenv(envAdapter) == "planted-two" {
		_ = adapter.Serve(context.Background(), os.Stdin, os.Stdout, plantedTwo{})
		os.Exit(0)
	}
	if os.Getenv(envAdapter) == "misbehaving" {
		_ = adapter.Serve(context.Background(), os.Stdin, os.Stdout, misbehaving{})
		os.Exit(0)
	}
	if os.Getenv(envMain) == "1" {
		code, err := runKbkit(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "kbkit:", err)
		}
		os.Exit(code)
	}
	os.Setenv(envMain, "1")
	os.Exit(m.Run())
}

// misbehaving is the reference, except that its tokenizer exits on
// "crash me" and never answers "hang me".
type misbehaving struct{ cases.Reference }

func (m misbehaving) Tokenize(ctx context.Context, req cases.TokenizeRequest) (cases.TokenizeReply, error) {
	if req.Text != nil {
		switch *req.Text {
		case "crash me":
			os.Exit(3)
		case "hang me":
			time.Sleep(time.Hour)
		}
	}
	return m.Reference.Tokenize(ctx, req)
}

// runKbkit runs args on a kbkit command line holding this package's
// commands as cmd/kbkit mounts them (`kbkit spec ...`, `kbkit adapter`)
// and returns its exit status, and the error when it is no exit status.
func runKbkit(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	root := &cobra.Command{Use: "kbkit", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(NewSpecCommand(), NewAdapterCommand())
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	var e cliutil.ExitError
	switch {
	case err == nil:
		return cliutil.ExitOK, nil
	case errors.As(err, &e):
		return e.Code, nil
	}
	return cliutil.ExitErrored, err
}

// kbkit runs the command line in process.
func kbkit(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code, err := runKbkit(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	if err != nil {
		errb.WriteString(err.Error())
	}
	return code, out.String(), errb.String()
}

// self is a --impl word running this test binary as kbkit.
func self(t *testing.T) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return "'" + exe + "'"
}

func needNode(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("KBKIT_REQUIRE_NODE") != "" {
			t.Fatal("node is not installed but KBKIT_REQUIRE_NODE is set (CI must run the Node adapter)")
		}
		t.Skip("node is not installed")
	}
}

var tapPoint = regexp.MustCompile(`(?m)^(ok|not ok) (\d+) - (\S+)(.*)$`)

// tapResults maps case id -> "ok" / "not ok" (+ directive).
func tapResults(t *testing.T, tap string) map[string]string {
	t.Helper()
	if !strings.HasPrefix(tap, "TAP version 14\n1..") {
		t.Fatalf("not TAP 14:\n%s", tap)
	}
	out := map[string]string{}
	for _, m := range tapPoint.FindAllStringSubmatch(tap, -1) {
		out[m[3]] = m[1] + m[4]
	}
	return out
}

func TestSpecRunBuiltin(t *testing.T) {
	code, out, errOut := kbkit(t, "", "spec", "run")
	if code != cliutil.ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, notOK(out), errOut)
	}
	if n := len(tapResults(t, out)); n < 100 {
		t.Errorf("only %d cases", n)
	}
}

// tapBlock returns the YAML diagnostic block of the test point named id,
// without its "---" and "..." lines.
func tapBlock(t *testing.T, tap, id string) string {
	t.Helper()
	_, rest, ok := strings.Cut(tap, " - "+id+"\n  ---\n")
	if !ok {
		t.Fatalf("no YAML block for %s in\n%s", id, tap)
	}
	block, _, ok := strings.Cut(rest, "\n  ...\n")
	if !ok {
		t.Fatalf("unterminated YAML block for %s", id)
	}
	return block
}

// notOK keeps the failing part of a TAP report, for error messages.
func notOK(tap string) string {
	var b strings.Builder
	in := false
	for _, l := range strings.Split(tap, "\n") {
		if strings.HasPrefix(l, "not ok") {
			in = true
		} else if strings.HasPrefix(l, "ok ") {
			in = false
		}
		if in || strings.HasPrefix(l, "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func TestSpecRunThroughKbkitAdapter(t *testing.T) {
	_, direct, _ := kbkit(t, "", "spec", "run")
	jsonPath := filepath.Join(t.TempDir(), "cases.jsonl")
	code, out, errOut := kbkit(t, "", "spec", "run", "--impl", self(t)+" adapter", "--json", jsonPath)
	if code != cliutil.ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, notOK(out), errOut)
	}
	want, got := tapResults(t, direct), tapResults(t, out)
	if len(got) != len(want) {
		t.Errorf("%d cases through the adapter, %d in process", len(got), len(want))
	}
	for id, r := range want {
		if got[id] != r {
			t.Errorf("%s: in process %q, through the adapter %q", id, r, got[id])
		}
	}
	if !strings.Contains(errOut, "adapter kbkit") {
		t.Errorf("stderr does not name the adapter: %s", errOut)
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != len(got) {
		t.Errorf("%d JSON lines for %d cases", len(lines), len(got))
	}
	var rec struct {
		ID, Suite, File, Status string
		Line                    int
		OK                      bool
	}
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil || rec.ID == "" || rec.Suite == "" || rec.File == "" || rec.Line == 0 || rec.Status == "" {
		t.Errorf("JSON line %q: %+v %v", lines[0], rec, err)
	}
}

// TestKbkitOnPathFallback: "kbkit adapter" runs this binary when no kbkit
// is on PATH.
func TestKbkitOnPathFallback(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	code, out, errOut := kbkit(t, "", "spec", "run", "--impl", "kbkit adapter", "--suite", "tokenizer")
	if code != cliutil.ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, notOK(out), errOut)
	}
	for id := range tapResults(t, out) {
		if !strings.HasPrefix(id, "tokenizer") {
			t.Errorf("--suite tokenizer ran %s", id)
		}
	}
}

func TestSpecRunWrongCase(t *testing.T) {
	code, out, _ := kbkit(t, "", "spec", "run", "testdata/wrong.yaml")
	if code != cliutil.ExitFailed {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	r := tapResults(t, out)
	if r["wrong/link-title"] != "not ok" || r["wrong/right"] != "ok" {
		t.Errorf("results %v", r)
	}
	for _, want := range []string{"file: testdata/wrong.yaml", "line: 3", `-     "title": "Budgets"`, `+     "title": "Budget"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
}

func TestExpectations(t *testing.T) {
	for _, tc := range []struct {
		file string
		code int
		want map[string]string
	}{
		{"expect-todo.yaml", cliutil.ExitOK, map[string]string{
			"wrong/link-title": "not ok # TODO expected failure: the case is wrong on purpose", "wrong/right": "ok"}},
		{"expect-unexpected-pass.yaml", cliutil.ExitFailed, map[string]string{
			"wrong/link-title": "not ok # TODO expected failure: claims both cases fail, but wrong/right passes", "wrong/right": "not ok"}},
		{"expect-skip.yaml", cliutil.ExitOK, map[string]string{
			"wrong/link-title": "ok # SKIP expected skip: not run at all", "wrong/right": "ok"}},
	} {
		code, out, errOut := kbkit(t, "", "spec", "run", "--expect", "testdata/"+tc.file, "testdata/wrong.yaml")
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d\n%s%s", tc.file, code, tc.code, out, errOut)
		}
		if got := tapResults(t, out); !equalMaps(got, tc.want) {
			t.Errorf("%s: results %q, want %q", tc.file, got, tc.want)
		}
		if tc.code == cliutil.ExitFailed && !strings.Contains(out, "unexpected pass") {
			t.Errorf("%s: no 'unexpected pass' in\n%s", tc.file, out)
		}
	}
	code, _, errOut := kbkit(t, "", "spec", "run", "--expect", "testdata/expect-invalid.yaml", "testdata/wrong.yaml")
	if code != cliutil.ExitErrored || !strings.Contains(errOut, "expect-invalid.yaml") {
		t.Errorf("invalid expectations: exit %d, %s", code, errOut)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestNodeAdapter(t *testing.T) {
	needNode(t)
	dir := "../../speckit/adapters/node/"
	junit := filepath.Join(t.TempDir(), "junit.xml")
	code, out, errOut := kbkit(t, "", "spec", "run", "--impl", "node "+dir+"adapter.mjs",
		"--expect", dir+"expectations.yaml", "--junit", junit)
	if code != cliutil.ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, notOK(out), errOut)
	}
	r := tapResults(t, out)
	ran, canonical := 0, 0
	for id, v := range r {
		if v == "ok" {
			ran++
			if strings.HasPrefix(id, "canonical/") {
				canonical++
			} else if !strings.HasPrefix(id, "tokenizer") && !strings.HasPrefix(id, "edit-text/") {
				t.Errorf("%s passed: the node adapter only does the tokenizer, edit-text and canonical JSON", id)
			}
		}
	}
	// Its canonical writer passes every vector of spec/canonical.json.
	if all := len(caseIDs(t, "canonical/")); canonical != all || all == 0 {
		t.Errorf("%d of %d canonical cases passed", canonical, all)
	}
	if ran < 100 {
		t.Errorf("only %d cases ran and passed", ran)
	}
	if _, err := os.Stat(junit); err != nil {
		t.Error(err)
	}
}

// caseIDs are the built-in spec's case ids that start with prefix.
func caseIDs(t *testing.T, prefix string) []string {
	t.Helper()
	var out []string
	for _, c := range cases.ForTest(t) {
		if strings.HasPrefix(c.ID, prefix) {
			out = append(out, c.ID)
		}
	}
	return out
}

func TestBrokenAdapter(t *testing.T) {
	needNode(t)
	junit := filepath.Join(t.TempDir(), "junit.xml")
	code, out, errOut := kbkit(t, "", "spec", "run", "--impl", "node ../../speckit/adapters/broken/adapter.mjs",
		"--junit", junit, "testdata/broken.yaml")
	if code != cliutil.ExitFailed {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	failing := []string{"broken/long-text-fails", "broken/link-text-fails"}
	want := map[string]string{
		"broken/short-text-passes": "ok", "broken/long-text-fails": "not ok", "broken/link-text-fails": "not ok",
		"broken/rejection-passes": "ok", "broken/tokenizer-passes": "ok",
	}
	if got := tapResults(t, out); !equalMaps(got, want) {
		t.Errorf("TAP results %q, want %q", got, want)
	}
	// The failing case's block carries its input: the document it was
	// given and the command, as the adapter received them.
	var diag struct {
		Diff  string `yaml:"diff"`
		Input struct {
			Type string `yaml:"type"`
			Doc  struct {
				Nodes []struct{ ID, Text string } `yaml:"nodes"`
				Page  struct{ Title string }      `yaml:"page"`
			} `yaml:"doc"`
			Cmd struct {
				Type    string            `yaml:"type"`
				Payload map[string]string `yaml:"payload"`
			} `yaml:"cmd"`
		} `yaml:"input"`
	}
	if err := yaml.Unmarshal([]byte(tapBlock(t, out, "broken/long-text-fails")), &diag); err != nil {
		t.Fatal(err)
	}
	in := diag.Input
	if in.Type != "apply" || len(in.Doc.Nodes) != 1 || in.Doc.Nodes[0].Text != "old" || in.Doc.Page.Title != "Test page" ||
		in.Cmd.Type != "edit-text" || in.Cmd.Payload["text"] != "Hello world" || !strings.Contains(diag.Diff, "+       \"text\": \"Hello worl\"") {
		t.Errorf("TAP block of broken/long-text-fails: input %+v, diff %q", in, diag.Diff)
	}
	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Cases []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("JUnit: %v\n%s", err, data)
	}
	var gotFailing []string
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			if c.Failure != nil {
				gotFailing = append(gotFailing, c.Name)
			}
		}
	}
	if strings.Join(gotFailing, " ") != strings.Join(failing, " ") || doc.Failures != 2 {
		t.Errorf("JUnit failures %v (%d), want %v", gotFailing, doc.Failures, failing)
	}
}

func TestCrashingAdapter(t *testing.T) {
	t.Setenv(envAdapter, "misbehaving")
	code, out, errOut := kbkit(t, "", "spec", "run", "--impl", self(t), "--timeout", "500ms", "testdata/crash.yaml")
	if code != cliutil.ExitErrored {
		t.Fatalf("exit %d, want 2\n%s\n%s", code, out, errOut)
	}
	want := map[string]string{
		"crash/before": "ok", "crash/crashes": "not ok", "crash/after-restart": "ok",
		"crash/hangs": "not ok", "crash/after-timeout": "ok",
	}
	if got := tapResults(t, out); !equalMaps(got, want) {
		t.Errorf("results %q, want %q\n%s", got, want, out)
	}
	for _, w := range []string{"exit status 3", "adapter: timeout", "severity: error"} {
		if !strings.Contains(out, w) {
			t.Errorf("the report lacks %q:\n%s", w, out)
		}
	}
	if !strings.Contains(errOut, "restarted 2 times") {
		t.Errorf("stderr: %s", errOut)
	}
}

// TestCrashBudgetPerSuite: after 5 crashes in a row in one suite the
// adapter is no longer restarted for that suite (its remaining cases are
// errored at once), but the other suites still run; the TAP trailer lists
// the ids that are not ok one a line.
func TestCrashBudgetPerSuite(t *testing.T) {
	t.Setenv(envAdapter, "misbehaving")
	code, out, errOut := kbkit(t, "", "spec", "run", "--impl", self(t), "testdata/crash-suite.yaml")
	if code != cliutil.ExitErrored {
		t.Fatalf("exit %d, want 2\n%s\n%s", code, out, errOut)
	}
	want := map[string]string{
		"crash-suite/crash-1": "not ok", "crash-suite/crash-2": "not ok", "crash-suite/crash-3": "not ok",
		"crash-suite/crash-4": "not ok", "crash-suite/crash-5": "not ok", "crash-suite/given-up": "not ok",
		"crash-suite/other-suite-runs": "ok",
	}
	if got := tapResults(t, out); !equalMaps(got, want) {
		t.Errorf("results %q, want %q\n%s", got, want, out)
	}
	if !strings.Contains(tapBlock(t, out, "crash-suite/given-up"), "gave up restarting") {
		t.Errorf("crash-suite/given-up is not errored for the exhausted budget:\n%s", out)
	}
	trailer := "# not ok (6):\n"
	for _, id := range []string{"crash-1", "crash-2", "crash-3", "crash-4", "crash-5", "given-up"} {
		trailer += "#   crash-suite/" + id + "\n"
	}
	if !strings.Contains(out, trailer) {
		t.Errorf("TAP lacks the trailer %q:\n%s", trailer, out)
	}
}

func TestSpecRunUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--suite", "nope"},
		{"--run", "("},
		{"--impl", "'unterminated"},
		{"--impl", "/nonexistent/adapter"},
		{"testdata/missing.yaml"},
		{"--expect", "testdata/missing.yaml"},
	} {
		code, _, errOut := kbkit(t, "", append([]string{"spec", "run"}, args...)...)
		if code != cliutil.ExitErrored || errOut == "" {
			t.Errorf("%q: exit %d, stderr %q", args, code, errOut)
		}
	}
}

func TestSpecRunFilters(t *testing.T) {
	code, out, _ := kbkit(t, "", "spec", "run", "--run", "^wrong/right$", "testdata/wrong.yaml")
	if r := tapResults(t, out); code != cliutil.ExitOK || len(r) != 1 || r["wrong/right"] != "ok" {
		t.Errorf("--run: exit %d, %v", code, r)
	}
	code, out, _ = kbkit(t, "", "spec", "run", "--suite", "commands", "testdata/wrong.yaml")
	if code != cliutil.ExitOK || !strings.Contains(out, "1..0\n") {
		t.Errorf("--suite commands on tokenizer cases: exit %d\n%s", code, out)
	}
}

func TestSpecExport(t *testing.T) {
	dir := t.TempDir()
	code, _, errOut := kbkit(t, "", "spec", "export", dir)
	if code != cliutil.ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, f := range []string{"README.md", "ADAPTER.md", "EXPECTATIONS.md", "tokenizer.yaml", "commands/edit-text.yaml", "schema/expectations.schema.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	// VERSION.json names the kit and the spec_version.
	var stamp ExportVersion
	if b, err := os.ReadFile(filepath.Join(dir, "VERSION.json")); err != nil {
		t.Error(err)
	} else if err := json.Unmarshal(b, &stamp); err != nil || stamp.Kit != version.Kit || stamp.SpecVersion != version.Spec || stamp.Protocol != adapter.Protocol {
		t.Errorf("VERSION.json: %s (%v)", b, err)
	}
	// It names the build's commit; a test binary has no VCS stamp, so the
	// one the Makefile passes (version.Commit) is what it names.
	if stamp.Commit != version.Commit {
		t.Errorf("VERSION.json: commit %q, the build's is %q", stamp.Commit, version.Commit)
	}
	defer func(c string) { version.Commit = c }(version.Commit)
	version.Commit = "0123456789abcdef0123456789abcdef01234567"
	if got := exportStamp().Commit; got != version.Commit {
		t.Errorf("exportStamp: commit %q, want version.Commit %q", got, version.Commit)
	}
	// The exported directory is a runnable spec.
	code, out, _ := kbkit(t, "", "spec", "run", dir)
	if code != cliutil.ExitOK || len(tapResults(t, out)) < 100 {
		t.Errorf("spec run on the export: exit %d\n%s", code, notOK(out))
	}
	// Every relative link of the exported prose finds its file in the
	// export (ADAPTER.md's adapters, EXPECTATIONS.md's schema).
	link := regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)
	links := 0
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".md" {
			return err
		}
		b, _ := os.ReadFile(p)
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			if strings.Contains(m[1], "://") || strings.HasPrefix(m[1], "mailto:") {
				continue
			}
			links++
			if _, err := os.Stat(filepath.Join(filepath.Dir(p), filepath.FromSlash(m[1]))); err != nil {
				rel, _ := filepath.Rel(dir, p)
				t.Errorf("%s links to %s, absent from the export", rel, m[1])
			}
		}
		return nil
	})
	if links < 5 {
		t.Errorf("only %d relative links checked", links)
	}
	// The adapters' imports of the types resolve inside the export.
	imp := regexp.MustCompile(`from "(\.\./[^"]+)"`)
	for _, f := range []string{"adapters/node/adapter.d.mts", "adapters/typescript/src/adapter.ts"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range imp.FindAllStringSubmatch(string(b), -1) {
			target := filepath.Join(dir, filepath.Dir(f), m[1])
			_, err := os.Stat(target)
			if err != nil && strings.HasSuffix(target, ".js") { // TypeScript: kbkit.js is typed by kbkit.d.ts
				_, err = os.Stat(strings.TrimSuffix(target, ".js") + ".d.ts")
			}
			if err != nil {
				t.Errorf("%s imports %s, absent from the export", f, m[1])
			}
		}
	}
	// The exported JavaScript adapter runs with its expectations file.
	if _, err := exec.LookPath("node"); err == nil {
		code, out, errOut := kbkit(t, "", "spec", "run", "--impl", "node "+filepath.Join(dir, "adapters/node/adapter.mjs"),
			"--expect", filepath.Join(dir, "adapters/node/expectations.yaml"), dir)
		if code != cliutil.ExitOK {
			t.Errorf("the exported node adapter: exit %d\n%s\n%s", code, notOK(out), errOut)
		}
	}
}

func TestAdapterCommand(t *testing.T) {
	in := `{"type":"init","msg_id":1,"protocol":1}` + "\n" + `{"type":"tokenize","msg_id":2,"text":"[[x]]"}` + "\n"
	code, out, _ := kbkit(t, in, "adapter")
	if code != cliutil.ExitOK {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], `{"type":"init_ok","in_reply_to":1,`) ||
		lines[1] != `{"type":"tokenize_ok","in_reply_to":2,"refs":[{"kind":"link","title":"x"}],"label":null,"deps":[]}` {
		t.Errorf("replies:\n%s", out)
	}
}

// TestSpecRunExpectationsMessages: an exact entry that an earlier glob
// covers is named with the glob that shadows it; an entry matching no case
// that ran says so, at its line; a bad file, or one with an entry that
// names no case, is refused at its line.
func TestSpecRunExpectationsMessages(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "e.yaml")
	os.WriteFile(good, []byte(`spec_version: 1
expectations:
  - {id: "tokenizer/label-*", status: skip, reason: later}
  - {id: tokenizer/label-simple, status: fail, reason: shadowed}
  - {id: window/local-accepted-is-sent-and-rendered, status: fail, reason: filtered out}
  - {id: "edit-text/fuzz:doc", status: fail, reason: "spec fuzz's"}
`), 0o644)
	code, _, errOut := kbkit(t, "", "spec", "run", "--suite", "tokenizer", "--expect", good)
	for _, want := range []string{
		good + `:4: expectation "tokenizer/label-simple" (fail) is never reached: the earlier "tokenizer/label-*" (skip) on line 3 matches it first`,
		good + `:5: expectation "window/local-accepted-is-sent-and-rendered" (fail) matched no case that ran`,
	} {
		if code != cliutil.ExitOK || !strings.Contains(errOut, want) {
			t.Errorf("exit %d, stderr lacks %q:\n%s", code, want, errOut)
		}
	}
	if strings.Contains(errOut, "edit-text/fuzz:doc") {
		t.Errorf("spec run noted spec fuzz's entry:\n%s", errOut)
	}
	unknown := filepath.Join(dir, "unknown.yaml")
	os.WriteFile(unknown, []byte("spec_version: 1\nexpectations:\n  - {id: tokenizer/label-simple, status: fail, reason: x}\n  - {id: tokenizer/no-such-case, status: fail, reason: x}\n  - {id: \"nothing/*\", status: skip, reason: x}\n"), 0o644)
	code, out, errOut := kbkit(t, "", "spec", "run", "--suite", "tokenizer", "--expect", unknown)
	for _, want := range []string{unknown + `:4: "tokenizer/no-such-case" is no spec case id or spec fuzz signature`,
		unknown + `:5: "nothing/*" matches no spec case id or spec fuzz signature`} {
		if code != cliutil.ExitErrored || out != "" || !strings.Contains(errOut, want) {
			t.Errorf("unknown ids: exit %d, stdout %q, stderr lacks %q:\n%s", code, out, want, errOut)
		}
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("spec_version: 1\nexpectations:\n  - id: a\n    status: fail\n   reason: x\n"), 0o644)
	code, out, errOut = kbkit(t, "", "spec", "run", "--expect", bad)
	if code != cliutil.ExitErrored || out != "" || !strings.Contains(errOut, bad+":5: did not find expected '-' indicator") {
		t.Errorf("bad file: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
