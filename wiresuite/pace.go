package wiresuite

import (
	"context"
	"time"

	"github.com/subspace/kbkit/wire"
)

// pacer keeps a check's calls within the rate limit the server advertises
// (kb.limits' rate_limit_per_second and rate_burst, PROTOCOL.md 8), so
// that a TOO_MANY_REQUESTS it gets is the cap it exercises, not the rate
// limit. It mirrors the server's token bucket at 90% of the rate and
// starts empty (earlier calls may have drained the server's), so it never
// gets ahead of it.
type pacer struct {
	rate   float64 // calls per second; 0: no limit
	burst  float64
	tokens float64
	last   time.Time
}

func newPacer(l *wire.Limits) *pacer {
	p := &pacer{rate: l.RateLimitPerSecond * 0.9, burst: float64(max(1, l.RateBurst)), last: time.Now()}
	return p
}

// wait returns when one more call fits.
func (p *pacer) wait(ctx context.Context) error {
	if p.rate <= 0 {
		return nil
	}
	for {
		now := time.Now()
		p.tokens = min(p.burst, p.tokens+now.Sub(p.last).Seconds()*p.rate)
		p.last = now
		if p.tokens >= 1 {
			p.tokens--
			return nil
		}
		t := time.NewTimer(time.Duration((1 - p.tokens) / p.rate * float64(time.Second)))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// duration is how long n calls take at the paced rate.
func (p *pacer) duration(n int) time.Duration {
	if p.rate <= 0 {
		return 0
	}
	return time.Duration(float64(n) / p.rate * float64(time.Second))
}
