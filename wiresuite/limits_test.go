package wiresuite

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/subspace/kbkit/server"
)

// The checks of checks_limits.go: each passes the reference server with
// its limit set, is skipped (saying why) where the limit is off or not
// advertised, and fails against a variant of the reference server broken
// as a server without the limit, or refusing without Retry-After, would
// be.

// offByDefault are the checks the reference server of these tests (its
// defaults) has skipped, with what the skip says: its rate limit is off
// and its admission control is larger than the suite exceeds.
// limits_test.go checks them with the limits set.
var offByDefault = map[string]string{
	"protocol/hostile-rate-limit":   "rate limiting is off",
	"protocol/hostile-max-inflight": "more concurrent calls than this suite sends",
}

// skippedAsOff reports whether r is the skip offByDefault expects.
func skippedAsOff(r Result) bool {
	want, ok := offByDefault[r.ID]
	return ok && r.Status == Skip && strings.Contains(r.Message, want)
}

// expectSkip fails the test unless id was skipped with a message holding
// reason.
func expectSkip(t *testing.T, results map[string]Result, id, reason string) {
	t.Helper()
	if r := results[id]; r.Status != Skip || !strings.Contains(r.Message, reason) {
		t.Errorf("%s: %s %q, want a skip saying %q", id, r.Status, r.Message, reason)
	}
}

// expectFailureSays fails the test unless id failed with a message
// holding what.
func expectFailureSays(t *testing.T, results map[string]Result, id, what string) {
	t.Helper()
	if r := results[id]; r.Status != Fail || !strings.Contains(r.Message, what) {
		t.Errorf("%s: want a failure saying %q: %s", id, what, describe(r))
	}
}

// stripRetryAfter drops the Retry-After header of every HTTP answer of
// status.
func stripRetryAfter(status int) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Upgrade") != "" {
				next.ServeHTTP(w, r)
				return
			}
			next.ServeHTTP(&headerDropper{ResponseWriter: w, status: status}, r)
		})
	}
}

type headerDropper struct {
	http.ResponseWriter
	status int
}

func (d *headerDropper) WriteHeader(code int) {
	if code == d.status {
		d.Header().Del("Retry-After")
	}
	d.ResponseWriter.WriteHeader(code)
}

// Aliases: the reference server passes; a kb.limits without max_aliases
// skips the check (and fails protocol/hostile-limits); a front that
// keeps the first max_aliases aliases of a command, so that one past the
// limit commits, fails it.
func TestHostileMaxAliases(t *testing.T) {
	env := start(t, nil)
	results := runHostile(t, env, "hostile-max-aliases")
	expectFailures(t, results, nil, []string{"protocol/hostile-max-aliases"})

	unadvertised := start(t, func(h http.Handler) http.Handler { return claimLimits(h, map[string]any{"max_aliases": nil}) })
	results = runHostile(t, unadvertised, "hostile-max-aliases", "hostile-limits")
	expectSkip(t, results, "protocol/hostile-max-aliases", "max_aliases")
	expectFailureSays(t, results, "protocol/hostile-limits", "max_aliases (absent)")

	truncating := start(t, func(h http.Handler) http.Handler {
		return editCommand(h, func(env map[string]any) {
			if p, ok := env["payload"].(map[string]any); ok {
				if a, ok := p["aliases"].([]any); ok && len(a) > server.MaxAliases {
					p["aliases"] = a[:server.MaxAliases]
				}
			}
		})
	})
	results = runHostile(t, truncating, "hostile-max-aliases", "command-set-aliases")
	expectFailures(t, results, []string{"protocol/hostile-max-aliases"}, []string{"protocol/command-set-aliases"})
	expectFailureSays(t, results, "protocol/hostile-max-aliases", "max_aliases+1")
}

// The per-device rate limit: a reference server with one passes, and
// the checks run right after it, a WebSocket call among them (no 429 is
// waited out there), are not refused; without one, or with one but no
// rate_burst advertised, the check is skipped.
// It fails a server that advertises a rate limit it does not enforce, and
// one whose 429 has no Retry-After.
func TestHostileRateLimit(t *testing.T) {
	rl := server.RateLimit{PerSecond: 5, Burst: 10}
	env := startRated(t, nil, testLimits, rl)
	results := runHostile(t, env, "hostile-rate-limit")
	expectFailures(t, results, nil, []string{"protocol/hostile-rate-limit"})
	results = runHostile(t, env, "ws-query-mutation", "whoami")
	expectFailures(t, results, nil, []string{"protocol/ws-query-mutation", "protocol/whoami"})

	off := start(t, nil)
	expectSkip(t, runHostile(t, off, "hostile-rate-limit"), "protocol/hostile-rate-limit", "rate limiting is off")
	noBurst := startRated(t, func(h http.Handler) http.Handler { return claimLimits(h, map[string]any{"rate_burst": nil}) }, testLimits, rl)
	expectSkip(t, runHostile(t, noBurst, "hostile-rate-limit"), "protocol/hostile-rate-limit", "rate_burst")

	claimed := start(t, func(h http.Handler) http.Handler {
		return claimLimits(h, map[string]any{"rate_limit_per_second": rl.PerSecond, "rate_burst": rl.Burst})
	})
	results = runHostile(t, claimed, "hostile-rate-limit", "whoami")
	expectFailures(t, results, []string{"protocol/hostile-rate-limit"}, []string{"protocol/whoami"})
	expectFailureSays(t, results, "protocol/hostile-rate-limit", "was not refused")

	bare := startRated(t, stripRetryAfter(http.StatusTooManyRequests), testLimits, rl)
	results = runHostile(t, bare, "hostile-rate-limit")
	expectFailures(t, results, []string{"protocol/hostile-rate-limit"}, nil)
	expectFailureSays(t, results, "protocol/hostile-rate-limit", "Retry-After")
}

// admissionLimits are testLimits with admission control small enough for
// protocol/hostile-max-inflight to exceed.
var admissionLimits = func() server.Limits {
	l := testLimits
	l.MaxInflight, l.MaxQueue, l.QueueTimeout = 1, 1, 50*time.Millisecond
	return l
}()

// Admission control: a reference server started with --max-inflight 1
// --max-queue 1 passes; with its defaults (64 and 1024) the check is
// skipped. It fails a server without admission control behind a
// kb.limits that claims it, and one whose 503 has no Retry-After.
func TestHostileMaxInflight(t *testing.T) {
	env := startWith(t, nil, admissionLimits)
	results := runHostile(t, env, "hostile-max-inflight", "whoami")
	expectFailures(t, results, nil, []string{"protocol/hostile-max-inflight", "protocol/whoami"})

	off := start(t, nil)
	expectSkip(t, runHostile(t, off, "hostile-max-inflight"), "protocol/hostile-max-inflight", "more concurrent calls than this suite sends")

	unbounded := testLimits
	unbounded.MaxInflight = -1
	claimed := startWith(t, func(h http.Handler) http.Handler {
		return claimLimits(h, map[string]any{"max_inflight": 1, "max_queue": 1, "queue_timeout_ms": 50})
	}, unbounded)
	results = runHostile(t, claimed, "hostile-max-inflight", "whoami")
	expectFailures(t, results, []string{"protocol/hostile-max-inflight"}, []string{"protocol/whoami"})
	expectFailureSays(t, results, "protocol/hostile-max-inflight", "none was refused 503")

	bare := startWith(t, stripRetryAfter(http.StatusServiceUnavailable), admissionLimits)
	results = runHostile(t, bare, "hostile-max-inflight")
	expectFailures(t, results, []string{"protocol/hostile-max-inflight"}, nil)
	expectFailureSays(t, results, "protocol/hostile-max-inflight", "Retry-After")
}

// Under a rate limit the other limit checks pace themselves, so that the
// refusals they meet are their limits': the concurrent calls of
// protocol/hostile-max-inflight (10 here) wait until the bucket, drained
// by the calls before them, holds them all (12 at most). All three pass.
func TestLimitChecksUnderRateLimit(t *testing.T) {
	env := startRated(t, nil, admissionLimits, server.RateLimit{PerSecond: 20, Burst: 12})
	ids := []string{"hostile-max-aliases", "hostile-max-inflight", "hostile-rate-limit", "whoami"}
	results := runHostile(t, env, ids...)
	var pass []string
	for _, id := range ids {
		pass = append(pass, "protocol/"+id)
	}
	expectFailures(t, results, nil, pass)
}
