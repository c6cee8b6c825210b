package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/subspace/kbkit/client"
)

// Every flag of every command that names what is checked refuses an empty
// or blank value with exit 2 before doing anything: `--impl ""` once
// checked the reference and exited 0.
func TestNameFlagsRefuseEmpty(t *testing.T) {
	type use struct{ path, flag string }
	var uses []use
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if _, ok := nameFlags[f.Name]; ok && c.Runnable() {
				uses = append(uses, use{c.CommandPath(), f.Name})
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
	for _, want := range []use{{"kbkit spec run", "impl"}, {"kbkit conformance run", "server"},
		{"kbkit conformance protocol", "token"}, {"kbkit loadgen run", "server"}, {"kbkit device pair", "workspace"}} {
		found := false
		for _, u := range uses {
			found = found || u == want
		}
		if !found {
			t.Errorf("%s has no --%s (the audit walks the wrong tree)", want.path, want.flag)
		}
	}
	for _, u := range uses {
		for _, v := range []string{"", "   "} {
			args := append(strings.Fields(strings.TrimPrefix(u.path, "kbkit ")), "--"+u.flag, v)
			code, out, errOut := kbkit(t, "", args...)
			if code != exitErrored || out != "" || !strings.Contains(errOut, "--"+u.flag+" is empty") {
				t.Errorf("%s --%s %q: exit %d, stdout %q, stderr %q; want exit 2 naming the flag, nothing on stdout",
					u.path, u.flag, v, code, out, errOut)
			}
		}
	}
}

// An exported but empty $KBKIT_URL (`export KBKIT_URL=$(jq -r .url
// missing.json)`) is refused rather than running the embedded server.
func TestEmptyServerEnvRefused(t *testing.T) {
	t.Setenv(client.EnvURL, " ")
	for _, args := range [][]string{{"conformance", "run"}, {"loadgen", "run"}, {"conformance", "protocol"}} {
		code, _, errOut := kbkit(t, "", args...)
		if code != exitErrored || !strings.Contains(errOut, "$KBKIT_URL is set but empty") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
}

// A server URL without a scheme is one clear line, not net/url's "first
// path segment in URL cannot contain colon"; a URL that reaches some other
// HTTP server is "not a kbkit server", without its page.
func TestServerURLErrors(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, "<!DOCTYPE HTML>\n<html><head><title>Error response</title></head><body>nope</body></html>\n")
	}))
	defer other.Close()
	hostPort := strings.TrimPrefix(other.URL, "http://")
	for _, cmd := range [][]string{{"conformance", "run", "--seeds", "1"}, {"conformance", "protocol"}, {"loadgen", "run", "--duration", "1s"}} {
		for _, tc := range []struct{ server, want string }{
			{hostPort, `--server: server URL "` + hostPort + `" has no scheme: did you mean http://` + hostPort + "?\n"},
			{"ftp://" + hostPort, `scheme "ftp", want http or https`},
			{other.URL, "the server at " + other.URL + " is not a kbkit server (kb.whoami answered HTTP 404, not a tRPC answer)\n"},
		} {
			code, _, errOut := kbkit(t, "", append(cmd, "--server", tc.server, "--token", "kbk_x")...)
			if code != exitErrored || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "DOCTYPE") || strings.Count(errOut, "\n") != 1 {
				t.Errorf("%v --server %s: exit %d, stderr %q; want exit 2 and one line with %q", cmd, tc.server, code, errOut, tc.want)
			}
		}
	}
}
