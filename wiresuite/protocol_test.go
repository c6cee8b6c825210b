package wiresuite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/subspace/kbkit/internal/version"
	"github.com/subspace/kbkit/target"

	"github.com/subspace/kbkit/server"
	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/sim"
)

func TestMain(m *testing.M) { os.Exit(pgprovider.RunTests(m)) }

// testLimits are the reference server's limits in these tests: the
// timeouts and caps of the hostile checks small enough to reach quickly.
var testLimits = server.Limits{
	BodyTimeout:               2 * time.Second,
	IdleTimeout:               3 * time.Second,
	ParamsTimeout:             2 * time.Second,
	MaxConnections:            64,
	MaxSubscriptionsPerSocket: 100, // past max_socket_queue: the suite must pace its subscriptions
	MaxSubscriptionsPerDevice: 150,
	MaxBatch:                  10,
	AuthFailures:              20,
}

// start runs the reference server (wrapped by wrap, if set) and returns an
// Env for it with a second workspace's token, a token to revoke and a
// restart hook.
func start(t *testing.T, wrap func(http.Handler) http.Handler) *Env {
	return startWith(t, wrap, testLimits)
}

func startWith(t *testing.T, wrap func(http.Handler) http.Handler, limits server.Limits) *Env {
	t.Helper()
	ctx := context.Background()
	dsn := pgprovider.ForTest(t)
	e, err := sim.NewEmbedded(ctx, dsn, sim.EmbeddedOptions{Instances: 1, Wrap: wrap, Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	tok, err := e.Devices(ctx, 2) // two devices of one workspace
	if err != nil {
		t.Fatal(err)
	}
	other, err := e.Devices(ctx, 1) // a fresh workspace
	if err != nil {
		t.Fatal(err)
	}
	revoke, err := e.Devices(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := e.Devices(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{BaseURL: e.Endpoints()[0], Token: tok[0], Token2: tok[1], OtherToken: other[0], RevokeToken: revoke[0], FreshToken: fresh[0],
		Restart: func(ctx context.Context) error { return e.RestartInstance(ctx, 0) }}
	if err := env.Preflight(ctx); err != nil {
		t.Fatal(err)
	}
	return env
}

func run(t *testing.T, env *Env, match string) map[string]Result {
	t.Helper()
	var re *regexp.Regexp
	if match != "" {
		re = regexp.MustCompile(match)
	}
	out := map[string]Result{}
	for _, r := range Run(context.Background(), env, Checks(), Options{Match: re, Timeout: 90 * time.Second}) {
		out[r.ID] = r
	}
	return out
}

func describe(r Result) string {
	return r.ID + ": " + r.Message + "\n  expected: " + r.Expected + "\n  got: " + r.Got +
		"\n  request: " + r.Request + "\n  response: " + r.Response
}

func TestChecksHaveStableUniqueIDs(t *testing.T) {
	seen := map[string]bool{}
	idRE := regexp.MustCompile(`^protocol/[a-z0-9]+(-[a-z0-9]+)*$`)
	for _, c := range Checks() {
		if !idRE.MatchString(c.ID) {
			t.Errorf("check id %q is not protocol/<kebab-case>", c.ID)
		}
		if seen[c.ID] {
			t.Errorf("check id %q twice", c.ID)
		}
		seen[c.ID] = true
		if c.Description == "" || c.Run == nil {
			t.Errorf("check %s has no description or no Run", c.ID)
		}
	}
	if len(seen) < 30 {
		t.Errorf("only %d checks", len(seen))
	}
}

// The reference server passes every check, reconnect and the
// cross-workspace checks included; with its default limits, the checks
// of offByDefault are skipped (limits_test.go sets those limits).
func TestReferenceServerPasses(t *testing.T) {
	env := start(t, nil)
	results := run(t, env, "")
	if len(results) != len(Checks()) {
		t.Fatalf("%d results for %d checks", len(results), len(Checks()))
	}
	for _, c := range Checks() {
		r := results[c.ID]
		switch r.Status {
		case Pass:
		case Skip:
			if !skippedAsOff(r) {
				t.Errorf("%s skipped: %s", c.ID, r.Message)
			}
		default:
			t.Errorf("%s", describe(r))
		}
	}
}

// Without --other-token and a restart hook, those checks are skipped, and
// the rest still pass.
func TestSkipsWithoutOtherTokenOrRestart(t *testing.T) {
	env := start(t, nil)
	env.OtherToken, env.Restart = "", nil
	results := run(t, env, `^protocol/(reconnect|cross-workspace|ws-connection-params-win|whoami)$`)
	for _, id := range []string{"protocol/reconnect", "protocol/cross-workspace", "protocol/ws-connection-params-win"} {
		if r := results[id]; r.Status != Skip || r.Message == "" {
			t.Errorf("%s: %s %q, want a skip with a reason", id, r.Status, r.Message)
		}
	}
	if r := results["protocol/whoami"]; r.Status != Pass {
		t.Errorf("%s", describe(r))
	}
	if s := Summarize(slices.Collect(maps.Values(results))); len(s.SkippedIDs) != 3 {
		t.Errorf("summary names skips %q, want 3", s.SkippedIDs)
	}

	// Strict: the same skips are failures, with the reason kept.
	strict := Run(context.Background(), env, Checks(), Options{Strict: true,
		Match: regexp.MustCompile(`^protocol/(reconnect|cross-workspace|whoami)$`)})
	s := Summarize(strict)
	if s.Failed != 2 || s.Skipped != 0 || s.Passed != 1 {
		t.Errorf("strict: %s", s)
	}
	for _, r := range strict {
		if r.Status == Fail && !strings.Contains(r.Message, "--strict") {
			t.Errorf("strict failure %s does not say why: %q", r.ID, r.Message)
		}
	}
}

func TestPreflightCannotRun(t *testing.T) {
	ctx := context.Background()
	// Nothing listens there.
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	err := (&Env{BaseURL: url, Token: "x"}).Preflight(ctx)
	if !errors.Is(err, target.ErrCannotRun) || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("unreachable server: %v", err)
	}
	env := start(t, nil)
	err = (&Env{BaseURL: env.BaseURL, Token: "kbk_nope"}).Preflight(ctx)
	if !errors.Is(err, target.ErrCannotRun) || !strings.Contains(err.Error(), "401") {
		t.Errorf("bad token: %v", err)
	}
	err = (&Env{BaseURL: env.BaseURL, Token: env.Token, OtherToken: env.Token}).Preflight(ctx)
	if !errors.Is(err, target.ErrCannotRun) || !strings.Contains(err.Error(), "same workspace") {
		t.Errorf("other token of the same workspace: %v", err)
	}
}

// ---- deliberately broken servers ----

// rewrite buffers a plain HTTP answer (WebSocket upgrades pass through)
// and lets edit change its status and body.
func rewrite(next http.Handler, edit func(r *http.Request, status int, body []byte) (int, []byte)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "" {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		status, body := edit(r, rec.Code, rec.Body.Bytes())
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		_, _ = w.Write(body)
	})
}

// editCommand rewrites the JSON envelope of a non-batch POST kb.command.
func editCommand(next http.Handler, edit func(env map[string]any)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/trpc/kb.command" && r.URL.Query().Get("batch") == "" {
			b, _ := io.ReadAll(r.Body)
			var env map[string]any
			if json.Unmarshal(b, &env) == nil && env != nil {
				edit(env)
				b, _ = json.Marshal(env)
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
			r.ContentLength = int64(len(b))
		}
		next.ServeHTTP(w, r)
	})
}

func expectFailures(t *testing.T, results map[string]Result, fail, pass []string) {
	t.Helper()
	for _, id := range fail {
		r, ok := results[id]
		switch {
		case !ok:
			t.Errorf("%s did not run", id)
		case r.Status != Fail:
			t.Errorf("%s: %s, want fail", id, r.Status)
		default:
			t.Logf("%s failed as it should: %s (expected %s, got %s)", id, r.Message, r.Expected, r.Got)
		}
	}
	for _, id := range pass {
		if r := results[id]; r.Status != Pass {
			t.Errorf("%s should pass on this server: %s", id, describe(r))
		}
	}
}

// A server answering rejections with 400 instead of 409.
func TestBrokenRejectionStatus(t *testing.T) {
	env := start(t, func(h http.Handler) http.Handler {
		return rewrite(h, func(_ *http.Request, status int, body []byte) (int, []byte) {
			if status == http.StatusConflict {
				return http.StatusBadRequest, body
			}
			return status, body
		})
	})
	results := run(t, env, `^protocol/(rejection|rejection-retry|create-page-existing|whoami|command-seq|batch-mixed-status)$`)
	expectFailures(t, results,
		[]string{"protocol/rejection", "protocol/rejection-retry", "protocol/create-page-existing"},
		[]string{"protocol/whoami", "protocol/command-seq", "protocol/batch-mixed-status"})
}

// A server without exactly-once: every kb.command gets a fresh id, so a
// retry is a new command.
func TestBrokenRetryDedup(t *testing.T) {
	env := start(t, func(h http.Handler) http.Handler {
		return editCommand(h, func(env map[string]any) { env["id"] = newID() })
	})
	results := run(t, env, `^protocol/(retry-committed|retry-create-page|rejection-retry|command-seq|whoami)$`)
	expectFailures(t, results,
		[]string{"protocol/retry-committed", "protocol/retry-create-page", "protocol/rejection-retry"},
		[]string{"protocol/command-seq", "protocol/whoami"})
}

// A lenient server that drops unknown envelope fields instead of refusing
// them: the unknown field is written through the trust boundary.
func TestBrokenLenientSchema(t *testing.T) {
	env := start(t, func(h http.Handler) http.Handler {
		return editCommand(h, func(env map[string]any) {
			for k := range env {
				switch k {
				case "id", "device_id", "page_id", "type", "payload":
				default:
					delete(env, k)
				}
			}
		})
	})
	results := run(t, env, `^protocol/(unknown-field|unknown-payload-field|forbidden-device)$`)
	expectFailures(t, results,
		[]string{"protocol/unknown-field"},
		[]string{"protocol/unknown-payload-field", "protocol/forbidden-device"})
	if r := results["protocol/unknown-field"]; !strings.Contains(r.Message+r.Got+r.Response, "HTTP 200") {
		t.Errorf("the failure should show the 200 answer: %s", describe(r))
	}
}

// A server that answers every request with a whoami: it passes the
// preflight and protocol/whoami, and fails the rest (no WebSocket, no
// errors).
func TestNotAKbkitServer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"result":{"data":{"workspace_id":"00000000-0000-0000-0000-000000000001","device_id":"00000000-0000-0000-0000-000000000002"}}}`))
	}))
	defer srv.Close()
	env := &Env{BaseURL: srv.URL, Token: "t", EventTimeout: 2 * time.Second}
	if err := env.Preflight(context.Background()); err != nil {
		t.Fatal(err)
	}
	results := run(t, env, `^protocol/(ws-ping|whoami|page-not-found|no-token)$`)
	expectFailures(t, results,
		[]string{"protocol/ws-ping", "protocol/page-not-found", "protocol/no-token"},
		[]string{"protocol/whoami"})
}

func TestReports(t *testing.T) {
	rs := []Result{
		{ID: "protocol/a", Description: "a", Status: Pass, Duration: time.Millisecond},
		{ID: "protocol/b", Description: "b # c", Status: Fail, Message: "wrong HTTP status", Expected: "HTTP 409 CONFLICT",
			Got: "HTTP 400", Request: "POST http://x/trpc/kb.command\n{}", Response: "HTTP 400 application/json\n{\"error\":{}}"},
		{ID: "protocol/c", Status: Skip, Message: "needs --other-token"},
	}
	var tap bytes.Buffer
	w := NewTAP(&tap)
	_ = w.Begin(len(rs))
	for i, r := range rs {
		if err := w.Result(i+1, r); err != nil {
			t.Fatal(err)
		}
	}
	_ = w.End(Summarize(rs))
	for _, want := range []string{"TAP version 14\n1..3\n# " + version.Line() + "\n", "ok 1 - protocol/a\n", "not ok 2 - protocol/b\n  ---\n",
		"  expected: HTTP 409 CONFLICT\n", "  got: HTTP 400\n", "  response: |-\n    HTTP 400 application/json\n",
		"  ...\n", "ok 3 - protocol/c # SKIP needs --other-token\n", "# 3 checks: 1 passed, 1 failed, 1 skipped\n", "# not ok (1):\n#   protocol/b\n"} {
		if !strings.Contains(tap.String(), want) {
			t.Errorf("TAP lacks %q:\n%s", want, tap.String())
		}
	}
	var junit bytes.Buffer
	if err := WriteJUnit(&junit, "kbkit conformance protocol", rs, time.Second); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`tests="3" failures="1" errors="0" skipped="1"`, `<testcase name="protocol/b" classname="protocol"`,
		`<failure message="wrong HTTP status" type="fail"><![CDATA[b # c`, `<skipped message="needs --other-token">`,
		`<property name="kbkit.version" value="` + version.Kit + `"></property>`} {
		if !strings.Contains(junit.String(), want) {
			t.Errorf("JUnit lacks %q:\n%s", want, junit.String())
		}
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, rs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(js.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], `"status":"fail"`) || !strings.Contains(lines[1], `"ok":false`) ||
		!strings.Contains(lines[0], `{"kbkit":"`+version.Kit+`","spec_version":`+strconv.Itoa(version.Spec)+`,`) {
		t.Errorf("JSON lines:\n%s", js.String())
	}
}
