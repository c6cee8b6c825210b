package loadgen

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Stage ramps the open model's target rate linearly from the previous
// stage's rate to Rate over Duration (a ramping arrival rate); a stage
// with the previous rate holds it constant.
type Stage struct {
	Duration time.Duration
	Rate     float64 // operations per second at the end of the stage
}

// Pacer is the open model's schedule, a pure function of elapsed time:
// operation n is due at At(n), whatever happened to the
// operations before it. After the last stage the last rate holds.
type Pacer struct {
	Start  float64 // rate at t=0
	Stages []Stage
}

// Constant is a pacer of rate operations per second.
func Constant(rate float64) Pacer { return Pacer{Start: rate} }

// ParseStages reads "10s:50,20s:200" (duration:rate, comma separated).
func ParseStages(s string) ([]Stage, error) {
	var out []Stage
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		d, r, ok := strings.Cut(part, ":")
		dur, err1 := time.ParseDuration(strings.TrimSpace(d))
		rate, err2 := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(r), "/s"), 64)
		if !ok || err1 != nil || err2 != nil || dur <= 0 || rate < 0 || math.IsInf(rate, 0) || math.IsNaN(rate) {
			return nil, fmt.Errorf("loadgen: stage %q: want DURATION:RATE, e.g. 10s:50", part)
		}
		out = append(out, Stage{Duration: dur, Rate: rate})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("loadgen: no stage in %q", s)
	}
	return out, nil
}

// Duration is the length of the stages.
func (p Pacer) Duration() time.Duration {
	var d time.Duration
	for _, s := range p.Stages {
		d += s.Duration
	}
	return d
}

// segment is a stretch of linearly changing rate: from a to b over d
// seconds (d = +Inf: constant a forever).
type segment struct{ a, b, d float64 }

func (p Pacer) segments() []segment {
	var out []segment
	prev := p.Start
	for _, s := range p.Stages {
		out = append(out, segment{prev, s.Rate, s.Duration.Seconds()})
		prev = s.Rate
	}
	return append(out, segment{prev, prev, math.Inf(1)})
}

// ops is the number of operations accumulated after tau seconds of seg.
func (s segment) ops(tau float64) float64 {
	if math.IsInf(s.d, 1) {
		return s.a * tau
	}
	return s.a*tau + (s.b-s.a)*tau*tau/(2*s.d)
}

// Rate is the target rate at elapsed t.
func (p Pacer) Rate(t time.Duration) float64 {
	x := t.Seconds()
	for _, s := range p.segments() {
		if x < s.d {
			if math.IsInf(s.d, 1) {
				return s.a
			}
			return s.a + (s.b-s.a)*x/s.d
		}
		x -= s.d
	}
	return 0
}

// cum is the number of operations accumulated by elapsed t (the
// integral of the rate).
func (p Pacer) cum(t time.Duration) float64 {
	x, total := t.Seconds(), 0.0
	for _, s := range p.segments() {
		if x <= s.d {
			return total + s.ops(x)
		}
		total += s.ops(s.d)
		x -= s.d
	}
	return total
}

// Due is the number of operations due before elapsed t: those whose At
// is earlier than t.
func (p Pacer) Due(t time.Duration) int64 {
	if t <= 0 {
		return 0
	}
	// The integral gives the count up to rounding; At decides.
	n := int64(math.Ceil(p.cum(t)))
	for n > 0 {
		if at, ok := p.At(n - 1); ok && at < t {
			break
		}
		n--
	}
	for {
		if at, ok := p.At(n); !ok || at >= t {
			return n
		}
		n++
	}
}

// At is when operation n (from 0) is due: the elapsed time at which
// more than n operations have accumulated. ok is false when that never
// happens (the rate stays at zero).
func (p Pacer) At(n int64) (time.Duration, bool) {
	m := float64(n)
	var base float64
	for _, s := range p.segments() {
		if m <= 0 && (s.a > 0 || s.b > s.a) {
			return time.Duration(base * float64(time.Second)), true // the first instant of a positive rate
		}
		full := s.ops(s.d)
		if math.IsInf(s.d, 1) || m < full {
			k := 0.0
			if !math.IsInf(s.d, 1) {
				k = (s.b - s.a) / (2 * s.d)
			}
			// k τ² + a τ = m, in the form that is stable for k -> 0.
			den := s.a + math.Sqrt(math.Max(0, s.a*s.a+4*k*m))
			if den <= 0 {
				return 0, false
			}
			tau := 2 * m / den
			if !math.IsInf(s.d, 1) {
				tau = math.Min(tau, s.d)
			}
			return time.Duration((base + tau) * float64(time.Second)), true
		}
		m -= full
		base += s.d
	}
	return 0, false
}
