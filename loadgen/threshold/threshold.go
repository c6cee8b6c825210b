package threshold

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/subspace/kbkit/loadgen/metrics"
)

// ExitCode is the exit status of a run with a broken threshold.
const ExitCode = 99

// Threshold is one parsed expression.
type Threshold struct {
	Expr   string
	Metric string // a latency, a counter, errors.KIND, rejections.CODE or rate
	Stat   string // latencies only: p99, max, ...
	Op     string
	// Value is microseconds for a latency statistic, a plain number
	// otherwise.
	Value float64
}

var ops = []string{"<=", ">=", "==", "!=", "<", ">"}

func isLatency(m string) bool {
	for _, n := range metrics.Latencies {
		if m == n {
			return true
		}
	}
	return false
}

// Parse reads one expression.
func Parse(expr string) (Threshold, error) {
	s := strings.TrimSpace(expr)
	t := Threshold{Expr: s}
	at, op := -1, ""
	for i := 0; i < len(s) && at < 0; i++ {
		for _, o := range ops {
			if strings.HasPrefix(s[i:], o) {
				at, op = i, o
				break
			}
		}
	}
	if at <= 0 {
		return t, fmt.Errorf("threshold %q: want METRIC OP VALUE, e.g. commit.p99<250ms or errors==0", expr)
	}
	t.Op = op
	name := strings.TrimSpace(s[:at])
	val := strings.TrimSpace(s[at+len(op):])
	if val == "" {
		return t, fmt.Errorf("threshold %q: no value after %s", expr, op)
	}
	metric, stat, _ := strings.Cut(name, ".")
	switch {
	case isLatency(metric):
		if stat == "" {
			return t, fmt.Errorf("threshold %q: %s needs a statistic (%s.p99, %s.max, ...)", expr, metric, metric, metric)
		}
		if _, err := statValue(metrics.NewHist(), stat); err != nil {
			return t, fmt.Errorf("threshold %q: %v", expr, err)
		}
		t.Metric, t.Stat = metric, stat
		if stat == "count" {
			v, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return t, fmt.Errorf("threshold %q: %q is not a number", expr, val)
			}
			t.Value = v
			return t, nil
		}
		d, err := parseDuration(val)
		if err != nil {
			return t, fmt.Errorf("threshold %q: %v", expr, err)
		}
		t.Value = float64(d) / float64(time.Microsecond)
		return t, nil
	case metric == "errors" && stat != "", metric == "rejections" && stat != "":
		t.Metric = name
	case metric == "rate" && stat == "":
		t.Metric = name
	case metric == Achieved && stat == "":
		t.Metric = name
		f, err := parseRatio(val)
		if err != nil {
			return t, fmt.Errorf("threshold %q: %v", expr, err)
		}
		t.Value = f
		return t, nil
	default:
		if _, ok := metrics.CounterNames[name]; !ok {
			return t, fmt.Errorf("threshold %q: unknown metric %q (latencies: %s; counters: %s; rate)",
				expr, name, strings.Join(metrics.Latencies, ", "), counterList())
		}
		t.Metric = name
	}
	v, err := strconv.ParseFloat(strings.TrimSuffix(val, "/s"), 64)
	if err != nil {
		return t, fmt.Errorf("threshold %q: %q is not a number", expr, val)
	}
	t.Value = v
	return t, nil
}

func counterList() string {
	return "errors, rejections, retries, refetches, dropped, connects, reconnects, commands, committed, local_rejections, due, echoes; achieved (committed ÷ due)"
}

// Achieved is the threshold metric of an open-model run's committed
// commands as a share of the operations its schedule made due (a ratio:
// 0.9 or 90%): under 1 when operations were dropped, rejected, failed or
// still undecided at the end of the drain. A run with nothing due (the
// closed model) has no such share, and a threshold on it fails.
const Achieved = "achieved"

// parseRatio reads a ratio: 0.9 or 90%.
func parseRatio(s string) (float64, error) {
	pct := strings.HasSuffix(s, "%")
	f, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil || math.IsNaN(f) || f < 0 {
		return 0, fmt.Errorf("%q is not a ratio (0.9 or 90%%)", s)
	}
	if pct {
		f /= 100
	}
	return f, nil
}

// AchievedOf is r's committed commands over its due operations, NaN when
// nothing was due.
func AchievedOf(r *metrics.Result) float64 {
	if r.Counts.Due == 0 {
		return math.NaN()
	}
	return float64(r.Counts.Committed) / float64(r.Counts.Due)
}

// parseDuration reads a Go duration, or a bare number of milliseconds.
func parseDuration(s string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return time.Duration(f * float64(time.Millisecond)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (250ms, 1.5s) or a number of milliseconds", s)
	}
	return d, nil
}

// statValue computes a statistic of h in microseconds (count: a number).
func statValue(h *metrics.Hist, stat string) (float64, error) {
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	switch stat {
	case "max":
		return us(h.Max()), nil
	case "min":
		return us(h.Min()), nil
	case "mean", "avg":
		return us(h.Mean()), nil
	case "count":
		return float64(h.Count()), nil
	}
	if p, ok := strings.CutPrefix(stat, "p"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err == nil && f >= 0 && f <= 100 {
			return us(h.Quantile(f)), nil
		}
	}
	return 0, fmt.Errorf("unknown statistic %q (p50, p90, p99, p99.9, pN, min, max, mean, count)", stat)
}

// ParseAll parses every expression.
func ParseAll(exprs []string) ([]Threshold, error) {
	var out []Threshold
	for _, e := range exprs {
		t, err := Parse(e)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// Actual computes the threshold's metric on r.
func (t Threshold) Actual(r *metrics.Result) float64 {
	switch {
	case t.Stat != "":
		v, _ := statValue(r.Hist(t.Metric), t.Stat)
		return v
	case t.Metric == "rate":
		return r.Rate()
	case t.Metric == Achieved:
		return AchievedOf(r)
	case strings.HasPrefix(t.Metric, "errors."):
		return float64(r.Errors[strings.TrimPrefix(t.Metric, "errors.")])
	case strings.HasPrefix(t.Metric, "rejections."):
		return float64(r.Rejections[strings.TrimPrefix(t.Metric, "rejections.")])
	}
	return float64(r.Counts.Get(metrics.CounterNames[t.Metric]))
}

func (t Threshold) format(v float64) string {
	switch {
	case t.Metric == Achieved && math.IsNaN(v):
		return "n/a (nothing was due: not an open-model run)"
	case t.Metric == Achieved:
		return strconv.FormatFloat(v, 'f', 3, 64)
	case t.Stat != "" && t.Stat != "count":
		return time.Duration(v * float64(time.Microsecond)).Round(10 * time.Microsecond).String()
	case t.Metric == "rate":
		return fmt.Sprintf("%.1f/s", v)
	case v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// Holds reports whether actual satisfies the threshold (never when
// actual is NaN: a figure the run cannot give).
func (t Threshold) Holds(actual float64) bool {
	if math.IsNaN(actual) {
		return false
	}
	switch t.Op {
	case "<":
		return actual < t.Value
	case "<=":
		return actual <= t.Value
	case ">":
		return actual > t.Value
	case ">=":
		return actual >= t.Value
	case "==":
		return actual == t.Value
	case "!=":
		return actual != t.Value
	}
	return false
}

// Eval checks the threshold against r.
func (t Threshold) Eval(r *metrics.Result) metrics.Check {
	a := t.Actual(r)
	return metrics.Check{Expr: t.Expr, Actual: t.format(a), Pass: t.Holds(a)}
}

// Evaluate checks every threshold; ok is false when any is broken.
func Evaluate(ts []Threshold, r *metrics.Result) (checks []metrics.Check, ok bool) {
	ok = true
	for _, t := range ts {
		c := t.Eval(r)
		ok = ok && c.Pass
		checks = append(checks, c)
	}
	return checks, ok
}
