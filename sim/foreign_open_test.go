package sim

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/subspace/kbkit/speckit/adapter"
)

// open (spec/ADAPTER.md section 7): a client that cannot get the page
// retries kb.page, then answers error within open's timeout_ms rather
// than leaving the runner to time out. The example client against a
// server that answers every call 503.
func TestExampleClientOpenGivesUpInTime(t *testing.T) {
	cl := exampleClient(t)
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"restarting","code":-32603,"data":{"code":"SERVICE_UNAVAILABLE","httpStatus":503}}}`, http.StatusServiceUnavailable)
	}))
	defer down.Close()
	argv, err := adapter.SplitCommand(cl)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ad, err := adapter.Start(ctx, argv, adapter.Options{Timeout: 30 * time.Second, Stderr: &testWriter{t: t}, MaxFailures: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ad.Close()
	const timeout = 6 * time.Second
	ad.SetTimeout(timeout)
	_, err = ad.Open(ctx, adapter.OpenRequest{Window: "w0", URL: down.URL, Token: "kbk_x",
		DeviceID: "00000000-0000-4000-8000-000000000001", PageID: "00000000-0000-4000-8000-000000000002", TimeoutMS: timeout.Milliseconds()})
	var re *adapter.RemoteError
	if !errors.As(err, &re) || re.Code != adapter.CodeCrashed || !strings.Contains(re.Text, "kb.page") {
		t.Fatalf("open of a page the client cannot fetch: %v; want an error reply (13) naming kb.page before the timeout", err)
	}
}

// An error reply to open is a finding that names the client and quotes
// its text, and the window is given up.
func TestForeignClientOpenError(t *testing.T) {
	script := `read l; echo '{"type":"init_ok","in_reply_to":1,"suites":["client"],"intents":["edit-text"]}'; ` +
		`read l; echo '{"type":"error","in_reply_to":2,"code":13,"text":"kb.page failed: 503"}'; cat >/dev/null`
	r := runForeign(t, Options{Windows: 1, Others: -1, Clients: []string{"sh -c " + shellQuote(script)}, Steps: 10}, 0)[0]
	var protocol string
	for _, c := range r.Checks {
		if c.Name == CheckProtocol {
			protocol = c.Detail
		}
	}
	if !strings.Contains(protocol, "w1 (sh -c") || !strings.Contains(protocol, "answered open with an error (kb.page failed: 503)") {
		t.Errorf("the protocol checker does not report the client's open error: %q", protocol)
	}
}
