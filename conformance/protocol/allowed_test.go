package protocol

import (
	"context"
	"net/http"
	"testing"

	"github.com/subspace/kbkit/conformance"
	"github.com/subspace/kbkit/server"
	"github.com/subspace/kbkit/server/pgprovider"
)

// Servers that behave as the spec allows, though not as the reference
// server does: each check that once failed such a server passes it.

// startRated is start with a per-device rate limit.
func startRated(t *testing.T, wrap func(http.Handler) http.Handler, limits server.Limits, rl server.RateLimit) *Env {
	t.Helper()
	ctx := context.Background()
	e, err := conformance.NewEmbedded(ctx, pgprovider.ForTest(t), conformance.EmbeddedOptions{Instances: 1, Wrap: wrap, Limits: limits, RateLimit: rl})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	tok, err := e.Devices(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{BaseURL: e.Endpoints()[0], Token: tok[0]}
	if err := env.Preflight(ctx); err != nil {
		t.Fatal(err)
	}
	return env
}

// A rate limit advertised in kb.limits (with its burst): the subscription
// cap check paces itself by it, so the TOO_MANY_REQUESTS it meets is the
// cap's. Without pacing, the 61st subscription of a burst of 60 is refused
// by the rate limit, inside the cap.
func TestAllowedRateLimit(t *testing.T) {
	limits := testLimits
	limits.MaxSubscriptionsPerSocket, limits.MaxSubscriptionsPerDevice = 60, 90
	env := startRated(t, nil, limits, server.RateLimit{PerSecond: 150, Burst: 60})
	results := runHostile(t, env, "hostile-limits", "hostile-subscription-cap", "whoami")
	expectFailures(t, results, nil, []string{"protocol/hostile-limits", "protocol/hostile-subscription-cap", "protocol/whoami"})
}

// HTTP keep-alive off (every answer says Connection: close, HTTP/1.1
// allows it): the connection cap check counts only the connections that
// are really open, and still finds the cap.
func TestAllowedConnectionClose(t *testing.T) {
	env := start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Upgrade") == "" {
				w.Header().Set("Connection", "close")
			}
			h.ServeHTTP(w, r)
		})
	})
	results := runHostile(t, env, "hostile-connection-cap", "whoami")
	expectFailures(t, results, nil, []string{"protocol/hostile-connection-cap", "protocol/whoami"})
}
