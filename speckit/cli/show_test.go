package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/subspace/kbkit/internal/cliutil"
)

func TestSpecShow(t *testing.T) {
	const id = "edit-text/command-id-not-a-string-invalid-payload"
	code, out, errOut := kbkit(t, "", "spec", "show", id)
	if code != cliutil.ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"# " + id + " (commands, commands/edit-text.yaml:", "request:\n{", `"type":"apply"`,
		"expected reply (the reference", `"type":"apply_ok","in_reply_to":1,"rejected":{"code":"invalid-payload"`, `"rejected": "invalid-payload"`} {
		if !strings.Contains(out, want) {
			t.Errorf("spec show lacks %q:\n%s", want, out)
		}
	}

	// --request is one line an adapter reads; kbkit adapter's answer to it
	// is --reply's line.
	code, req, errOut := kbkit(t, "", "spec", "show", "--request", "window/gap-triggers-refetch")
	if code != cliutil.ExitOK || strings.Count(req, "\n") != 1 {
		t.Fatalf("--request: exit %d, %q %s", code, req, errOut)
	}
	var msg struct {
		Type  string `json:"type"`
		MsgID int    `json:"msg_id"`
	}
	if err := json.Unmarshal([]byte(req), &msg); err != nil || msg.Type != "window" || msg.MsgID != 1 {
		t.Fatalf("--request: %q: %v", req, err)
	}
	_, served, _ := kbkit(t, req, "adapter")
	code, reply, _ := kbkit(t, "", "spec", "show", "--reply", "window/gap-triggers-refetch")
	if code != cliutil.ExitOK || served != reply || !strings.HasPrefix(reply, `{"type":"window_ok","in_reply_to":1,"states":[`) {
		t.Errorf("--reply %q\nkbkit adapter %q", reply, served)
	}

	// A case of a given file: the reference's reply, whatever the case says.
	code, out, _ = kbkit(t, "", "spec", "show", "--reply", "wrong/link-title", "testdata/wrong.yaml")
	if code != cliutil.ExitOK || !strings.Contains(out, `"type":"tokenize_ok"`) {
		t.Errorf("a case of a file: exit %d %s", code, out)
	}

	for _, tc := range []struct{ args []string }{
		{[]string{"spec", "show", "no/such-case"}},
		{[]string{"spec", "show", ""}},
		{[]string{"spec", "show", "--request", "--reply", id}},
	} {
		if code, _, errOut := kbkit(t, "", tc.args...); code != cliutil.ExitErrored || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, errOut)
		}
	}
	if _, _, errOut := kbkit(t, "", "spec", "show", "restore-page/record-own"); !strings.Contains(errOut, "restore-page/record-own-parent-invalid-payload") {
		t.Errorf("no near ids named: %s", errOut)
	}
}

// The number of spec cases changes with every case added; the docs say
// where to read it (kbkit spec run prints it) rather than type it.
func TestDocsDoNotTypeTheCaseCount(t *testing.T) {
	count := regexp.MustCompile(`\b[0-9][0-9,]+ (spec |YAML )?cases\b`)
	docs, _ := filepath.Glob("../../spec/*.md")
	more, _ := filepath.Glob("../../docs/*.md")
	docs = append(append(docs, "../../README.md"), more...)
	for _, name := range docs {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range count.FindAll(b, -1) {
			t.Errorf("%s types a case count %q: say `kbkit spec run` prints it", name, m)
		}
	}
}
