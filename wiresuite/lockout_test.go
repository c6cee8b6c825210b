package wiresuite

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/sim"
)

// addressLockout is the reference server's unknown-token limit as it once
// was: once an address has had perMinute unknown tokens answered 401 in
// the last minute, every token of it is refused 429 unless one of its
// requests succeeded in the last 30 s (the token cache of then).
func addressLockout(next http.Handler, perMinute int) http.Handler {
	var mu sync.Mutex
	failures := map[string][]time.Time{}
	verified := map[string]time.Time{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "" {
			next.ServeHTTP(w, r)
			return
		}
		host, _, _ := strings.Cut(r.RemoteAddr, ":")
		token := r.Header.Get("Authorization")
		now := time.Now()
		mu.Lock()
		recent := failures[host][:0]
		for _, at := range failures[host] {
			if now.Sub(at) < time.Minute {
				recent = append(recent, at)
			}
		}
		failures[host] = recent
		locked := len(recent) >= perMinute && now.Sub(verified[token]) > 30*time.Second
		mu.Unlock()
		if locked && token != "" {
			w.Header().Set("Retry-After", "60")
			writeJSON(w, http.StatusTooManyRequests, `{"error":{"message":"too many unknown tokens from this address","code":-32029,"data":{"code":"TOO_MANY_REQUESTS","httpStatus":429,"retryable":true}}}`)
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		mu.Lock()
		switch {
		case sw.status == http.StatusUnauthorized:
			failures[host] = append(failures[host], now)
		case sw.status < 300:
			verified[token] = now
		}
		mu.Unlock()
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// A valid token presented for the first time right after a burst of
// unknown tokens is refused by the old limit: protocol/hostile-lockout
// fails; protocol/hostile-unknown-tokens cannot tell.
func TestBrokenAddressLockout(t *testing.T) {
	env := start(t, func(h http.Handler) http.Handler { return addressLockout(h, testLimits.AuthFailures) })
	if env.FreshToken == "" {
		t.Fatal("start gave no fresh token")
	}
	results := runHostile(t, env, "whoami", "hostile-unknown-tokens", "hostile-lockout")
	expectFailures(t, results, []string{"protocol/hostile-lockout"}, []string{"protocol/whoami", "protocol/hostile-unknown-tokens"})
	if r := results["protocol/hostile-lockout"]; !strings.Contains(r.Message, "fresh token") {
		t.Errorf("the failure is not the fresh token's: %s", r.Message)
	}
}

// The suite leaves nothing behind that changes how the server answers the
// next one: the whole protocol suite, then kbkit conformance run with a
// device the suite never used, against the same server from the same
// address, back to back; both pass.
func TestProtocolThenRunBackToBack(t *testing.T) {
	ctx := context.Background()
	e, err := sim.NewEmbedded(ctx, pgprovider.ForTest(t), sim.EmbeddedOptions{Instances: 1, Limits: testLimits})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	devices, err := e.Devices(ctx, 2) // T1 and T2 of one workspace
	if err != nil {
		t.Fatal(err)
	}
	other, err := e.Devices(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{BaseURL: e.Endpoints()[0], Token: devices[0], OtherToken: other[0]}
	if err := env.Preflight(ctx); err != nil {
		t.Fatal(err)
	}
	for _, r := range run(t, env, "") {
		if r.Status == Fail {
			t.Errorf("%s", describe(r))
		}
	}
	reports, err := sim.RunSeeds(ctx, sim.Remote(env.BaseURL, devices), sim.Options{Seeds: 2, Steps: 60})
	if err != nil {
		t.Fatalf("conformance run right after the protocol suite: %v", err)
	}
	for _, r := range reports {
		if r.Err != "" || r.Failed() {
			t.Errorf("seed %d: err %q, failed %v", r.Seed, r.Err, r.Failed())
		}
	}
}
