package wiresuite

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
)

// htmlEscaping is what Go's encoding/json does by default, and what RFC
// 8785 does not: '<', '>', '&' and U+2028/9 as \u escapes.
var htmlEscaping = strings.NewReplacer("<", `\u003c`, ">", `\u003e`, "&", `\u0026`, "\u2028", `\u2028`, "\u2029", `\u2029`)

// A server whose kb.page documents are Go's encoding/json output (keys and
// nodes sorted, but HTML characters escaped): the byte-for-byte document
// checks fail it, saying which rule, and the checks that compare values
// pass.
func TestBrokenHTMLEscapedDocs(t *testing.T) {
	env := start(t, func(h http.Handler) http.Handler {
		return rewrite(h, func(r *http.Request, status int, body []byte) (int, []byte) {
			if r.URL.Path == "/trpc/kb.page" {
				return status, []byte(htmlEscaping.Replace(string(body)))
			}
			return status, body
		})
	})
	results := run(t, env, `^protocol/(page-snapshot|command-set-outputs|command-delete|page-outcomes|whoami)$`)
	expectFailures(t, results,
		[]string{"protocol/page-snapshot", "protocol/command-set-outputs", "protocol/command-delete"},
		[]string{"protocol/page-outcomes", "protocol/whoami"})
	if r := results["protocol/page-snapshot"]; !strings.Contains(r.Message, "'<', '>' and '&' are written as themselves") {
		t.Errorf("the failure does not name the rule it checks: %s", describe(r))
	}
}

// A server that writes the document with white space inside it
// (pretty-printed) is not canonical either, and the failure says so.
func TestBrokenWhiteSpaceInDoc(t *testing.T) {
	env := start(t, func(h http.Handler) http.Handler {
		return rewrite(h, func(r *http.Request, status int, body []byte) (int, []byte) {
			if r.URL.Path == "/trpc/kb.page" {
				return status, bytes.ReplaceAll(body, []byte(`"nodes":[`), []byte(`"nodes": [`))
			}
			return status, body
		})
	})
	results := run(t, env, `^protocol/(page-snapshot|whoami)$`)
	expectFailures(t, results, []string{"protocol/page-snapshot"}, []string{"protocol/whoami"})
	if r := results["protocol/page-snapshot"]; !strings.Contains(r.Message, "no white space") {
		t.Errorf("the failure does not name the rule it checks: %s", describe(r))
	}
}
