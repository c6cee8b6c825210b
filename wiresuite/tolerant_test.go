package wiresuite

import (
	"bytes"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/subspace/kbkit/sim/broken"
	"github.com/subspace/kbkit/spec"
)

// brokenBy runs the reference server broken by the named variant of
// sim/broken, wrapping its own handler (broken.Wrap: no proxy, so the
// transport the hostile checks exercise is the server's).
func brokenBy(t *testing.T, variant string) (*Env, func() int64) {
	t.Helper()
	wrap, fired, err := broken.Wrap(variant)
	if err != nil {
		t.Fatal(err)
	}
	return startWith(t, wrap, testLimits), fired
}

// A server whose kb.limits lacks one field (rate_burst, which servers
// written before it was required lack) fails exactly one check, the one
// about kb.limits' fields, naming the field; every other check goes on
// (the subscription cap paces itself assuming a burst of 1) and passes.
func TestLimitsLackingOneFieldFailOneCheck(t *testing.T) {
	env, fired := brokenBy(t, "limits-no-rate-burst")
	results := run(t, env, "")
	if fired() == 0 {
		t.Fatal("the proxy never answered kb.limits without rate_burst")
	}
	var failed []string
	for _, c := range Checks() {
		r := results[c.ID]
		switch r.Status {
		case Fail:
			failed = append(failed, c.ID)
			if c.ID != "protocol/hostile-limits" {
				t.Errorf("%s", describe(r))
			}
		case Skip:
			if !skippedAsOff(r) {
				t.Errorf("%s skipped: %s", c.ID, r.Message)
			}
		}
	}
	if r := results["protocol/hostile-limits"]; r.Status != Fail || !strings.Contains(r.Message, "rate_burst (absent)") {
		t.Errorf("protocol/hostile-limits: %s, want a failure naming rate_burst", describe(r))
	}
	if len(failed) != 1 {
		t.Errorf("%d checks failed, want 1 (protocol/hostile-limits): %v", len(failed), failed)
	}
}

// PROTOCOL.md 8 states what a check assumes for a field kb.limits lacks:
// assumedLimits, field for field.
func TestSpecStatesAssumedLimits(t *testing.T) {
	b, err := fs.ReadFile(spec.FS, "PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte("assumes the least a\nserver may advertise:"))
	if i < 0 {
		t.Fatal("PROTOCOL.md 8 does not say what the suite assumes for a field kb.limits lacks")
	}
	text := strings.Join(strings.Fields(string(b[i:i+300])), " ")
	stated := map[string]string{}
	for _, m := range regexp.MustCompile("`([a-z_]+)` ([0-9]+)").FindAllStringSubmatch(text[:strings.Index(text, ".")], -1) {
		stated[m[1]] = m[2]
	}
	if !maps.Equal(stated, assumedLimits) {
		t.Errorf("PROTOCOL.md 8 states %v, the suite assumes %v", stated, assumedLimits)
	}
	for k := range assumedLimits {
		if !slices.Contains(limitFields, k) {
			t.Errorf("assumedLimits names %q, no field of kb.limits", k)
		}
	}
}

// A shared setup step that a server cannot do fails the check about it,
// and each later check that needs it is skipped naming it: a server
// without WebSockets fails protocol/ws-auth-header, and no check after it
// fails for a refused upgrade again; a server whose create-page fails
// fails protocol/create-page, and no check after it fails in its setup.
func TestSharedSetupFailsOnce(t *testing.T) {
	for _, tc := range []struct {
		name, owner, failure string
		wrap                 func(http.Handler) http.Handler
		// stillFail are the checks that fail besides the owner: each
		// exercises the broken part itself (its own request is refused),
		// so it fails for its own rule rather than being skipped.
		stillFail []string
	}{
		{"no WebSockets", "protocol/ws-auth-header", "the WebSocket upgrade was refused", func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Upgrade") != "" {
					http.Error(w, "no WebSockets here", http.StatusServiceUnavailable)
					return
				}
				h.ServeHTTP(w, r)
			})
		}, []string{"protocol/gapless-concurrent", "protocol/cross-workspace", "protocol/ws-connection-params",
			"protocol/ws-connection-params-win", "protocol/ws-no-token", "protocol/ws-bad-connection-params",
			"protocol/hostile-silent-websocket", "protocol/hostile-subscription-cap", "protocol/hostile-batch-cap",
			"protocol/hostile-ws-binary", "protocol/hostile-ws-invalid-utf8", "protocol/hostile-ws-stop-unknown",
			"protocol/hostile-revoke", "protocol/hostile-write-timeout"}},
		{"no create-page", "protocol/create-page", "setup: ", func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/trpc/kb.command" && r.Body != nil {
					b, _ := io.ReadAll(r.Body)
					if bytes.Contains(b, []byte(`"create-page"`)) {
						http.Error(w, "create-page is broken", http.StatusInternalServerError)
						return
					}
					r.Body = io.NopCloser(bytes.NewReader(b))
				}
				h.ServeHTTP(w, r)
			})
		}, []string{"protocol/retry-create-page", "protocol/command-unknown-page", "protocol/unsupported-media-type",
			"protocol/missing-content-type", "protocol/hostile-long-text", "protocol/hostile-slow-body"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := startWith(t, tc.wrap, testLimits)
			results := run(t, env, "")
			if r := results[tc.owner]; r.Status != Fail {
				t.Fatalf("%s: %s, want a failure", tc.owner, r.Status)
			}
			after, skipped := false, 0
			var failed []string
			for _, c := range Checks() {
				r := results[c.ID]
				if r.Status == Fail {
					failed = append(failed, c.ID)
				}
				if after && r.Status == Fail && strings.Contains(r.Message, tc.failure) {
					t.Errorf("%s fails again for what %s is about: %s", c.ID, tc.owner, r.Message)
				}
				if r.Status == Skip && strings.Contains(r.Message, tc.owner+" fails for it") {
					skipped++
				}
				after = after || c.ID == tc.owner
			}
			if skipped == 0 {
				t.Errorf("no check was skipped naming %s", tc.owner)
			}
			want := append([]string{tc.owner}, tc.stillFail...)
			slices.Sort(want)
			slices.Sort(failed)
			if !slices.Equal(failed, want) {
				t.Errorf("the checks that fail are\n  %s\nwant %s and the checks that exercise what it breaks themselves:\n  %s",
					strings.Join(failed, "\n  "), tc.owner, strings.Join(want, "\n  "))
			}
			t.Logf("%d checks failed (%s), %d skipped naming %s", len(failed), strings.Join(failed, ", "), skipped, tc.owner)
		})
	}
}
