package report

import (
	"fmt"
	"html/template"
	"math"
	"time"

	"github.com/subspace/kbkit/loadgen/metrics"
)

// Intervals are wall-clock seconds (so that shards align): the first and
// last of the load are partial, and seconds after its end are the drain
// (commands in flight decided, windows converging). A chart draws each
// second at its middle, shades the partial ones and the drain, and gives
// rates per second of load covered, so a partial second is not a dip.

// coverage is the part of second u inside the load (1 for the drain's
// seconds, whose events span the whole second).
func coverage(r *metrics.Result, u int64) float64 {
	s0, s1 := time.Unix(u, 0), time.Unix(u+1, 0)
	if !s0.Before(r.End) {
		return 1
	}
	lo, hi := s0, s1
	if r.Start.After(lo) {
		lo = r.Start
	}
	if r.End.Before(hi) {
		hi = r.End
	}
	return math.Max(0, hi.Sub(lo).Seconds())
}

// minCoverage is the smallest part of a second whose rate is drawn: less
// says too little to draw (the second is still shaded).
const minCoverage = 0.2

func xOf(r *metrics.Result, u int64) float64 { return float64(u-r.Start.Unix()) + 0.5 }

// timeBands are the shaded seconds of a result.
func timeBands(r *metrics.Result) []band {
	var out []band
	for _, iv := range r.Intervals {
		x := xOf(r, iv.Unix) - 0.5
		switch c := coverage(r, iv.Unix); {
		case !time.Unix(iv.Unix, 0).Before(r.End):
			out = append(out, band{x, x + 1, "drain"})
		case c < 0.999:
			out = append(out, band{x, x + 1, "partial"})
		}
	}
	return out
}

const bandNote = "shaded: partial seconds (light) and the drain after the load (dark); rates are per second of load covered"

// latencyOverTime charts p50, p90, p99 and max of one metric per second.
func latencyOverTime(r *metrics.Result, name string) template.HTML {
	names := []string{"p50", "p90", "p99", "max"}
	ss := make([]series, len(names))
	for i, n := range names {
		ss[i] = series{name: n, color: pctColors[i], dash: n == "max"}
	}
	for _, iv := range r.Intervals {
		s, ok := iv.Latency[name]
		if !ok || s.Total == 0 {
			continue
		}
		h, err := s.Hist()
		if err != nil {
			continue
		}
		x := xOf(r, iv.Unix)
		for i, v := range []time.Duration{h.Quantile(50), h.Quantile(90), h.Quantile(99), h.Max()} {
			ss[i].pts = append(ss[i].pts, [2]float64{x, ms(v)})
		}
	}
	return chart{title: name + " latency per second", xLabel: "seconds since start", yFmt: msFmt, xFmt: secFmt, series: ss,
		bands: timeBands(r)}.svg()
}

func rateFmt(v float64) string { return fmt.Sprintf("%.4g", v) }

// rates is one series per counter, per second of load covered.
func rates(r *metrics.Result, names []string, colors []string, get func(metrics.Interval) []int64) []series {
	ss := make([]series, len(names))
	for i, n := range names {
		ss[i] = series{name: n, color: colors[i%len(colors)]}
	}
	for _, iv := range r.Intervals {
		c := coverage(r, iv.Unix)
		if c < minCoverage {
			continue
		}
		x := xOf(r, iv.Unix)
		for i, v := range get(iv) {
			ss[i].pts = append(ss[i].pts, [2]float64{x, float64(v) / c})
		}
	}
	return ss
}

// throughput charts commands per second: committed, and the target of
// the open model.
func throughput(r *metrics.Result) template.HTML {
	names := []string{"committed/s", "target/s"}
	ss := rates(r, names, []string{"#1f77b4", "#7f7f7f"}, func(iv metrics.Interval) []int64 {
		return []int64{iv.Counts.Committed, iv.Counts.Due}
	})
	ss[1].dash = true
	if r.Run.Model != "open" {
		ss = ss[:1]
	}
	return chart{title: "throughput per second", xLabel: "seconds since start", yMin0: true, yFmt: rateFmt, xFmt: secFmt,
		series: ss, bands: timeBands(r), note: bandNote}.svg()
}

// troubles charts what went wrong or needed recovery, per second: errors,
// rejections, dropped operations, retries, reconnects, refetches. Every
// line is drawn, zero included: a flat zero says "none".
func troubles(r *metrics.Result) template.HTML {
	names := []string{"errors/s", "rejected/s", "dropped/s", "retries/s", "reconnects/s", "refetches/s"}
	ss := rates(r, names, []string{"#d62728", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"}, func(iv metrics.Interval) []int64 {
		c := iv.Counts
		return []int64{c.Errors, c.Rejections, c.Dropped, c.Retries, c.Reconnects, c.Refetches}
	})
	if r.Run.Model != "open" {
		ss = append(ss[:2], ss[3:]...) // nothing is dropped in the closed model
	}
	return chart{title: "errors and recovery per second", xLabel: "seconds since start", yMin0: true,
		yFmt: rateFmt, xFmt: secFmt, series: ss, bands: timeBands(r)}.svg()
}

// inFlight charts the peak of operations in flight per second (nil when
// the result did not sample it).
func inFlight(r *metrics.Result) template.HTML {
	if !r.InFlightSampled {
		return ""
	}
	s := series{name: "in flight (peak)", color: "#2ca02c"}
	for _, iv := range r.Intervals {
		if time.Unix(iv.Unix, 0).Before(r.End) {
			s.pts = append(s.pts, [2]float64{xOf(r, iv.Unix), float64(iv.InFlight)})
		}
	}
	return chart{title: "operations in flight (peak per second)", xLabel: "seconds since start", yMin0: true,
		yFmt: rateFmt, xFmt: secFmt, series: []series{s}, bands: timeBands(r), height: 200}.svg()
}

// TypeRow is one command type's line of the per-type table.
type TypeRow struct {
	Type                                                string
	Commands, Committed, Rejections, Refused, Errors    int64
	CommitP50, CommitP90, CommitP99, CommitMax, EchoP50 time.Duration
	EchoP99                                             time.Duration
	HasCommit, HasEcho                                  bool
}

// TypeRows is the per-type table (nil when the result has no types).
func TypeRows(r *metrics.Result) []TypeRow {
	var out []TypeRow
	for _, n := range r.TypeNames() {
		t := r.Types[n]
		c := t.Counts
		out = append(out, TypeRow{Type: n, Commands: c.Commands, Committed: c.Committed, Rejections: c.Rejections,
			Refused: c.LocalRejections, Errors: c.Errors,
			CommitP50: t.Commit.Quantile(50), CommitP90: t.Commit.Quantile(90), CommitP99: t.Commit.Quantile(99), CommitMax: t.Commit.Max(),
			EchoP50: t.Echo.Quantile(50), EchoP99: t.Echo.Quantile(99), HasCommit: t.Commit.Count() > 0, HasEcho: t.Echo.Count() > 0})
	}
	return out
}
