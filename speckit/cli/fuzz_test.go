package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/subspace/kbkit/internal/cliutil"
	"github.com/subspace/kbkit/internal/version"
	"github.com/subspace/kbkit/speckit/cases"
)

// planted is the reference with one planted divergence: its tokenizer
// loses the last of two or more refs.
type planted struct{ cases.Reference }

func (p planted) Tokenize(ctx context.Context, req cases.TokenizeRequest) (cases.TokenizeReply, error) {
	r, err := p.Reference.Tokenize(ctx, req)
	var refs []json.RawMessage
	if err == nil && json.Unmarshal(r.Refs, &refs) == nil && len(refs) >= 2 {
		r.Refs, _ = json.Marshal(refs[:len(refs)-1])
	}
	return r, err
}

// TestSpecFuzzNeedsImpl: no --impl, or a blank one, is refused with exit 2.
// (On kbkit's command line a blank --impl is refused before the command
// runs, "--impl is empty": cmd/kbkit's TestNameFlagsRefuseEmpty.)
func TestSpecFuzzNeedsImpl(t *testing.T) {
	for _, tc := range []struct {
		impl []string
		want string
	}{{nil, "--impl is required"}, {[]string{"--impl", ""}, "--impl is required"}, {[]string{"--impl", "   "}, "--impl is required"}} {
		code, _, errOut := kbkit(t, "", append([]string{"spec", "fuzz", "--count", "10"}, tc.impl...)...)
		if code != cliutil.ExitErrored || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %s", tc.impl, code, errOut, tc.want)
		}
	}
	code, _, errOut := kbkit(t, "", "spec", "fuzz", "--impl", "kbkit-no-such-adapter", "--count", "10")
	if code != cliutil.ExitErrored || !strings.Contains(errOut, "starting the adapter") {
		t.Errorf("missing adapter: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = kbkit(t, "", "spec", "fuzz", "--impl", self(t)+" adapter", "--suite", "nope", "--count", "10")
	if code != cliutil.ExitErrored || !strings.Contains(errOut, `unknown suite "nope"`) {
		t.Errorf("bad suite: exit %d, stderr %q", code, errOut)
	}
}

func TestSpecFuzzReferenceAgrees(t *testing.T) {
	code, out, errOut := kbkit(t, "", "spec", "fuzz", "--impl", self(t)+" adapter", "--count", "400", "--seed", "5")
	if code != cliutil.ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"seed 5", "400 inputs in", "0 difference(s)", "--seed 5 --count 400"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestSpecFuzzPlanted: the planted tokenizer divergence is found, exit 1;
// the printed case, saved as a case file, passes `spec run` against the
// reference and fails it against the planted adapter; the JSON and JUnit
// reports name it; the replay line draws the same difference again.
func TestSpecFuzzPlanted(t *testing.T) {
	t.Setenv(envAdapter, "planted")
	dir := t.TempDir()
	jsonPath, junitPath := filepath.Join(dir, "fuzz.jsonl"), filepath.Join(dir, "junit.xml")
	impl := self(t)
	code, out, errOut := kbkit(t, "", "spec", "fuzz", "--impl", impl, "--suite", "tokenizer", "--seconds", "30",
		"--seed", "9", "--max-differences", "1", "--json", jsonPath, "--junit", junitPath)
	if code != cliutil.ExitFailed {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	t.Log(out)
	if !strings.HasPrefix(out, version.Line()+"\n") {
		t.Errorf("the text report does not open with %q:\n%s", version.Line(), out)
	}
	start := strings.Index(out, "  - id: tokenizer/fuzz-")
	if start < 0 {
		t.Fatalf("no case printed:\n%s", out)
	}
	end := strings.Index(out[start:], "\n\n")
	caseText := out[start : start+end+1]
	file := filepath.Join(dir, "fuzz.yaml")
	if err := os.WriteFile(file, []byte("spec_version: 1\ncases:\n"+caseText), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, o, e := kbkit(t, "", "spec", "run", file); code != cliutil.ExitOK {
		t.Errorf("the printed case against the reference: exit %d\n%s%s", code, o, e)
	}
	if code, o, e := kbkit(t, "", "spec", "run", "--impl", impl, file); code != cliutil.ExitFailed {
		t.Errorf("the printed case against the planted adapter: exit %d, want 1\n%s%s", code, o, e)
	}

	var verdicts []string
	f, err := os.Open(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct{ ID, Verdict, Diff string }
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("json line %q: %v", sc.Text(), err)
		}
		verdicts = append(verdicts, rec.ID+"="+rec.Verdict)
		if rec.Verdict == "fail" && !strings.Contains(rec.Diff, "case:\n  - id: "+rec.ID) {
			t.Errorf("the JSON record of %s lacks its case:\n%s", rec.ID, rec.Diff)
		}
	}
	if len(verdicts) != 2 || verdicts[0] != "fuzz/tokenizer=pass" || !strings.HasSuffix(verdicts[1], "=fail") {
		t.Errorf("JSON verdicts %v, want the suite's pass and one fail", verdicts)
	}
	data, err := os.ReadFile(junitPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil || doc.Failures != 1 {
		t.Errorf("JUnit: %v, failures %d, want 1\n%s", err, doc.Failures, data)
	}

	// The replay line draws the same inputs: the same difference again.
	m := regexp.MustCompile(`replay: kbkit spec fuzz --impl \S+ --seed 9 --count (\d+) --suite tokenizer --max-differences 1`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no replay line:\n%s", out)
	}
	code, again, _ := kbkit(t, "", "spec", "fuzz", "--impl", impl, "--suite", "tokenizer", "--seed", "9", "--count", m[1], "--max-differences", "1")
	if code != cliutil.ExitFailed || !strings.Contains(again, caseText) {
		t.Errorf("replay: exit %d; the same case was not printed:\n%s", code, again)
	}
}
