package adapter

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/subspace/kbkit/spec/schema"
	"github.com/subspace/kbkit/speckit/cases"
)

// Environment of the "tee" fake adapter: the directory it logs to, and the
// adapter it stands in front of (a JSON array of words; unset: the
// reference, served in this process).
const (
	teeDirEnv   = "KBKIT_ADAPTER_TEST_TEE_DIR"
	teeChildEnv = "KBKIT_ADAPTER_TEST_TEE_CHILD"
)

// teeAdapter is an adapter that copies every line it is sent to
// requests.ndjson and every line it answers to replies.ndjson.
func teeAdapter(ctx context.Context) int {
	dir := os.Getenv(teeDirEnv)
	reqs, err := os.OpenFile(filepath.Join(dir, "requests.ndjson"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 1
	}
	defer reqs.Close()
	reps, err := os.OpenFile(filepath.Join(dir, "replies.ndjson"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 1
	}
	defer reps.Close()
	in := io.TeeReader(os.Stdin, reqs)
	out := io.MultiWriter(os.Stdout, reps)
	child := os.Getenv(teeChildEnv)
	if child == "" {
		if err := Serve(ctx, in, out, cases.Reference{}); err != nil {
			return 1
		}
		return 0
	}
	var argv []string
	if err := json.Unmarshal([]byte(child), &argv); err != nil || len(argv) == 0 {
		return 1
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, out, os.Stderr
	if err := cmd.Run(); err != nil {
		return 1
	}
	return 0
}

// validateLog checks every line of an NDJSON log against the adapter
// message schemas and counts the message types.
func validateLog(t *testing.T, path string) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	bad := 0
	for sc.Scan() {
		line := sc.Bytes()
		var h struct{ Type string }
		_ = json.Unmarshal(line, &h)
		seen[h.Type]++
		if err := schema.ValidateAdapterMessage(line); err != nil {
			if bad++; bad <= 10 {
				t.Errorf("%s: %v\n%s", filepath.Base(path), err, clip(line))
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return seen
}

func specCases(t *testing.T) []cases.Case {
	return cases.ForTest(t)
}

// runTee sends every spec case through the tee adapter in front of child
// (nil: the reference) and returns the log directory.
func runTee(t *testing.T, child []string) string {
	t.Helper()
	dir := t.TempDir()
	env := []string{teeDirEnv + "=" + dir}
	if child != nil {
		b, _ := json.Marshal(child)
		env = append(env, teeChildEnv+"="+string(b))
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c, err := Start(context.Background(), []string{exe}, Options{Env: append(os.Environ(), append(env, modeEnv+"=tee")...)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, k := range specCases(t) {
		if k.Suite() == cases.SuiteCommands {
			var cmd struct{ Type string }
			b, _ := json.Marshal(k.When["cmd"])
			_ = json.Unmarshal(b, &cmd)
			if !c.Info().SupportsCommand(cmd.Type) {
				continue
			}
		}
		if !c.Info().Supports(k.Suite()) {
			continue
		}
		if o := cases.Check(ctx, c, k); o.Status == cases.Error {
			t.Errorf("%s: %s", k.ID, o.Diff)
		}
	}
	if err := c.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	return dir
}

// The runner's requests and the reference's replies, for every spec case,
// validate against spec/schema/adapter; so does each type of error reply.
func TestMessagesMatchSchemas(t *testing.T) {
	dir := runTee(t, nil)
	reqs := validateLog(t, filepath.Join(dir, "requests.ndjson"))
	reps := validateLog(t, filepath.Join(dir, "replies.ndjson"))
	for _, typ := range []string{TypeInit, TypeApply, TypeTokenize, TypeWindow, TypePlan, TypeCanonical} {
		if reqs[typ] == 0 || reps[typ+"_ok"] == 0 {
			t.Errorf("no %s request (%d) or %s_ok reply (%d) was checked", typ, reqs[typ], typ, reps[typ+"_ok"])
		}
	}

	// error replies: an unknown message type (10), a line that is not JSON
	// (in_reply_to null), a request without its fields (12).
	var out bytes.Buffer
	in := strings.Join([]string{
		`{"type":"init","msg_id":1,"protocol":1}`,
		`{"type":"frobnicate","msg_id":2}`,
		`not json`,
		`{"type":"apply","msg_id":3}`,
		`{"type":"canonical","msg_id":4}`,
	}, "\n") + "\n"
	if err := Serve(context.Background(), strings.NewReader(in), &out, cases.Reference{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d replies:\n%s", len(lines), out.String())
	}
	for _, l := range lines[1:] {
		var h struct {
			Type string
			Code int
		}
		if err := json.Unmarshal([]byte(l), &h); err != nil || h.Type != TypeError {
			t.Errorf("not an error reply: %s", l)
		}
		if err := schema.ValidateAdapterMessage([]byte(l)); err != nil {
			t.Errorf("%v\n%s", err, l)
		}
	}
}

// The Node adapter's replies validate too.
func TestNodeAdapterRepliesMatchSchemas(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("KBKIT_REQUIRE_NODE") != "" {
			t.Fatal("node is not installed but KBKIT_REQUIRE_NODE is set")
		}
		t.Skip("node is not installed")
	}
	script, err := filepath.Abs("../adapters/node/adapter.mjs")
	if err != nil {
		t.Fatal(err)
	}
	dir := runTee(t, []string{"node", script})
	reps := validateLog(t, filepath.Join(dir, "replies.ndjson"))
	validateLog(t, filepath.Join(dir, "requests.ndjson"))
	for _, typ := range []string{"init_ok", "apply_ok", "tokenize_ok", "canonical_ok"} {
		if reps[typ] == 0 {
			t.Errorf("no %s reply was checked (%v)", typ, reps)
		}
	}
}

// The TypeScript skeleton's replies validate too, once it is built
// (scripts/ci-ts-adapter.sh builds it and sets KBKIT_REQUIRE_TS_ADAPTER).
func TestTypeScriptAdapterRepliesMatchSchemas(t *testing.T) {
	script, err := filepath.Abs("../adapters/typescript/build/adapter.js")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(script); err != nil {
		if os.Getenv("KBKIT_REQUIRE_TS_ADAPTER") != "" {
			t.Fatalf("%v (build it: npm ci && npx tsc -p . in speckit/adapters/typescript)", err)
		}
		t.Skip("the TypeScript adapter is not built")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not installed but the TypeScript adapter is built")
	}
	dir := runTee(t, []string{"node", script})
	reps := validateLog(t, filepath.Join(dir, "replies.ndjson"))
	for _, typ := range []string{"init_ok", "apply_ok", "tokenize_ok"} {
		if reps[typ] == 0 {
			t.Errorf("no %s reply was checked (%v)", typ, reps)
		}
	}
}

// A window script with no steps is sent as "steps": [], not null (the
// schema requires an array), whether the request comes from a case or
// is built without steps.
func TestEmptyWindowScriptSendsEmptySteps(t *testing.T) {
	var k cases.Case
	for _, c := range specCases(t) {
		if c.Suite() == cases.SuiteWindow {
			k = c
			break
		}
	}
	k.Steps = []any{}
	in, err := cases.Input(k)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(in); !strings.Contains(string(b), `"steps":[]`) {
		t.Errorf("cases.Input of an empty script: %s", b)
	}

	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c, err := Start(context.Background(), []string{exe}, Options{Env: append(os.Environ(), teeDirEnv+"="+dir, modeEnv+"=tee")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if o := cases.Check(ctx, c, k); o.Status == cases.Error {
		t.Errorf("the empty script: %s", o.Diff)
	}
	if _, err := c.Window(ctx, cases.WindowRequest{Given: json.RawMessage(`{"doc":{"nodes":[],"page":{"aliases":[],"dir":"","id":"p","merged_into":null,"title":"p"}},"seq":0}`)}); err != nil {
		t.Errorf("a WindowRequest without steps: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	if seen := validateLog(t, filepath.Join(dir, "requests.ndjson")); seen[TypeWindow] != 2 {
		t.Fatalf("%d window requests sent, want 2", seen[TypeWindow])
	}
	b, err := os.ReadFile(filepath.Join(dir, "requests.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.Contains(l, `"type":"window"`) && !strings.Contains(l, `"steps":[]`) {
			t.Errorf("an empty window script is not sent as \"steps\": []:\n%s", l)
		}
	}
}
