package cli

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/subspace/kbkit/internal/cliutil"
	"github.com/subspace/kbkit/sim/broken"
)

const (
	exitOK      = cliutil.ExitOK
	exitFailed  = cliutil.ExitFailed
	exitErrored = cliutil.ExitErrored
)

// kbkit runs `kbkit conformance run` in process, mounted as cmd/kbkit
// mounts it (the broken servers of sim/broken behind --broken-server),
// and returns its exit status and output.
func kbkit(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return kbkitContext(context.Background(), t, stdin, args...)
}

// kbkitContext is kbkit with ctx as the command's context (cancelling it
// is an interrupt).
func kbkitContext(ctx context.Context, t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	root := cliutil.Mount([]string{"conformance"}, NewRunCommand(BrokenServers{Variants: broken.Variants(), New: broken.New}))
	return cliutil.Execute(ctx, root, stdin, args...)
}

// fakeServer answers every request with a kb.whoami (as wiresuite/cli's
// tests' fake server does): a --server that passes the flag checks.
func fakeServer(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer good" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"message":"unknown device token","code":-32001,"data":{"code":"UNAUTHORIZED","httpStatus":401}}}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"result":{"data":{"workspace_id":"00000000-0000-0000-0000-000000000001","device_id":"00000000-0000-0000-0000-000000000002"}}}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Mounted without broken servers, --broken-server is refused (exit 2)
// rather than ignored: the run against the plain server would pass.
func TestConformanceRunWithoutBrokenServers(t *testing.T) {
	cmd := NewRunCommand(BrokenServers{})
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs([]string{"--server", fakeServer(t), "--token", "good", "--seeds", "1", "--broken-server", "reorder"})
	err := cmd.Execute()
	var e cliutil.ExitError
	if !errors.As(err, &e) || e.Code != exitErrored || out.Len() != 0 ||
		errb.String() != "kbkit conformance run: --broken-server: no broken servers in this build\n" {
		t.Errorf("error %v, stdout %q, stderr %q; want exit 2 and the refusal", err, out.String(), errb.String())
	}
}
