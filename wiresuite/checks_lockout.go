package wiresuite

import (
	"context"
	"fmt"
	"net/http"
)

// checkLockout: the unknown-token limit refuses only unknown tokens
// (PROTOCOL.md 8). Right after a burst of unknown tokens from this
// address has spent its allowance, the suite's valid tokens still
// authenticate, and so does Env.FreshToken, presented for the first time:
// a device behind the same address (a NAT, a CI runner, loopback) is not
// locked out by another client's bad tokens.
func checkLockout(ctx context.Context, e *Env) error {
	_, n, err := e.needLimit(ctx, "auth_failures_per_minute", limitNeed{
		none: Skipf("kb.limits advertises no limit on unknown tokens per address: nothing to be locked out by"),
		most: 10000, over: failf("more than this suite tries (10000)"),
	})
	if err != nil {
		return err
	}
	spent := false
	for i := 0; i < unknownTokenBurst(n) && !spent; i++ {
		r, err := e.sendUnknownToken(ctx)
		if err != nil {
			return err
		}
		spent = r.Status == http.StatusTooManyRequests
	}
	if !spent {
		return failf("%d unknown tokens from one address were all answered without a 429: auth_failures_per_minute %d is not enforced (PROTOCOL.md 8)", unknownTokenBurst(n), n)
	}
	tokens := []struct{ name, token string }{{"the token", e.Token}, {"the other token", e.OtherToken}, {"the fresh token (presented for the first time)", e.FreshToken}}
	for _, t := range tokens {
		if t.token == "" {
			continue
		}
		r, err := e.send(ctx, request{method: http.MethodGet, path: "/trpc/kb.whoami", token: t.token, no429Retry: true})
		if err != nil {
			return err
		}
		if r.Status != http.StatusOK {
			return r.fail("HTTP 200 (the limit refuses only unknown tokens)", fmt.Sprintf("HTTP %d", r.Status),
				"kb.whoami with %s right after a burst of unknown tokens from the same address: a valid token must still authenticate (PROTOCOL.md 8)", t.name)
		}
		if _, err := expectSuccess(r); err != nil {
			return step("kb.whoami with "+t.name, err)
		}
	}
	return nil
}

// unknownTokenBurst is how many unknown tokens a check sends to spend an
// allowance of n a minute: n, and a few more for the refill while they
// are sent.
func unknownTokenBurst(n int) int { return n + n/10 + 5 }

// sendUnknownToken is kb.whoami with a token no device has, its answer as
// it comes (a 429 is not retried).
func (e *Env) sendUnknownToken(ctx context.Context) (*Response, error) {
	return e.send(ctx, request{method: http.MethodGet, path: "/trpc/kb.whoami", token: "kbk_unknown_" + newID(), no429Retry: true})
}
