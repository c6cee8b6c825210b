package server

import (
	"context"
	"testing"
	"time"

	"github.com/subspace/kbkit/wire"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/server/store"
)

// whoami calls kb.whoami with token and returns the status.
func whoami(c client, token string) int {
	c.t.Helper()
	status, _ := c.do("GET", "/trpc/"+wire.PathWhoami, nil, token)
	return status
}

// waitStatus polls kb.whoami until it answers want (a notification is on
// its way) or 5 s pass.
func waitStatus(t *testing.T, c client, token string, want int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a hang detector
	for {
		got := whoami(c, token)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("kb.whoami: status %d, want %d", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitCacheComplete waits until in's token cache holds every device.
func waitCacheComplete(t *testing.T, in *instance) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a hang detector
	for {
		_, _, complete := in.srv.auth.get(store.TokenHash{})
		if complete && in.srv.revoke.ready.Load() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the token cache was not loaded within 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The unknown-token limit refuses only unknown tokens: after a burst of
// unknown tokens from one address, a device paired before the instance
// started, one paired on another instance since, and one never used here
// all still authenticate, from the cache, without a query.
func TestUnknownTokenLimitRefusesOnlyUnknown(t *testing.T) {
	dsn := pgprovider.ForTest(t)
	lim := DefaultLimits
	lim.AuthFailures = 3
	early, err := func() (store.PairedDevice, error) {
		st, err := store.Open(context.Background(), dsn)
		if err != nil {
			return store.PairedDevice{}, err
		}
		defer st.Close()
		return st.PairDevice(context.Background(), "acme")
	}()
	if err != nil {
		t.Fatal(err)
	}
	in := newInstance(t, dsn, Options{Limits: lim})
	other := newInstance(t, dsn, Options{})
	c := client{t: t, base: in.ts.URL, dev: early}
	waitStatus(t, c, early.Token, 200)
	waitCacheComplete(t, in)

	for i := range 6 {
		got := whoami(c, "kbk_unknown")
		if want := 401; i >= 3 {
			want = 429
			if got != want {
				t.Fatalf("unknown token %d: status %d, want %d", i+1, got, want)
			}
		} else if got != want {
			t.Fatalf("unknown token %d: status %d, want %d", i+1, got, want)
		}
	}
	late := pair(t, other, "acme") // paired on another instance, never used on in
	waitStatus(t, c, late.dev.Token, 200)

	lookups := tokenLookups(t, in)
	for _, tok := range []string{early.Token, late.dev.Token} {
		if got := whoami(c, tok); got != 200 {
			t.Fatalf("valid token after a burst of unknown ones: status %d", got)
		}
	}
	if n := tokenLookups(t, in) - lookups; n != 0 {
		t.Errorf("valid tokens cost %v queries, want 0 (the cache)", n)
	}
	if got := whoami(c, "kbk_unknown"); got != 429 {
		t.Fatalf("unknown token still refused: status %d", got)
	}

	if _, err := other.st.RevokeDevice(context.Background(), late.dev.DeviceID); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, late.dev.Token, 429) // revoked: unknown now, and the address is spent
}

// With the cache off every token is looked up, and the limit still refuses
// only the unknown ones.
func TestUnknownTokenLimitWithoutCache(t *testing.T) {
	lim := DefaultLimits
	lim.AuthFailures = 2
	in := newInstance(t, pgprovider.ForTest(t), Options{Limits: lim, AuthCacheTTL: -1})
	c := pair(t, in, "acme")
	for range 4 {
		whoami(c, "kbk_unknown")
	}
	if got := whoami(c, "kbk_unknown"); got != 429 {
		t.Fatalf("unknown token past the limit: status %d, want 429", got)
	}
	if got := whoami(c, c.dev.Token); got != 200 {
		t.Fatalf("valid token past the limit, cache off: status %d, want 200", got)
	}
}

// tokenLookups reads kbkit_token_lookups_total of in.
func tokenLookups(t *testing.T, in *instance) float64 {
	t.Helper()
	fams, err := in.srv.opts.Registry.(prometheus.Gatherer).Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == "kbkit_token_lookups_total" {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("no kbkit_token_lookups_total")
	return 0
}
