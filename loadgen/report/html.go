package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"time"

	"github.com/subspace/kbkit/loadgen/metrics"
)

var colors = map[string]string{
	metrics.Commit: "#1f77b4", metrics.Echo: "#2ca02c", metrics.Fanout: "#d62728", metrics.Convergence: "#9467bd",
}

var pctColors = []string{"#9ecae1", "#4292c6", "#08519c", "#d94801"}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func msFmt(v float64) string { return Dur(time.Duration(v * float64(time.Millisecond))) }

func secFmt(v float64) string { return fmt.Sprintf("%gs", v) }

// latencyOverTime charts p50, p90, p99 and max of one metric per second.
func latencyOverTime(r *metrics.Result, name string) template.HTML {
	names := []string{"p50", "p90", "p99", "max"}
	ss := make([]series, len(names))
	for i, n := range names {
		ss[i] = series{name: n, color: pctColors[i], dash: n == "max"}
	}
	t0 := r.Start.Unix()
	for _, iv := range r.Intervals {
		s, ok := iv.Latency[name]
		if !ok || s.Total == 0 {
			continue
		}
		h, err := s.Hist()
		if err != nil {
			continue
		}
		x := float64(iv.Unix - t0)
		for i, v := range []time.Duration{h.Quantile(50), h.Quantile(90), h.Quantile(99), h.Max()} {
			ss[i].pts = append(ss[i].pts, [2]float64{x, ms(v)})
		}
	}
	return chart{title: name + " latency per second", xLabel: "seconds since start", yFmt: msFmt, xFmt: secFmt, series: ss}.svg()
}

// throughput charts commands per second: target (open model), committed,
// rejected, errors and dropped.
func throughput(r *metrics.Result) template.HTML {
	t0 := r.Start.Unix()
	ss := []series{
		{name: "committed/s", color: "#1f77b4"},
		{name: "target/s", color: "#7f7f7f", dash: true},
		{name: "rejected/s", color: "#ff7f0e"},
		{name: "errors/s", color: "#d62728"},
		{name: "dropped/s", color: "#9467bd"},
	}
	for _, iv := range r.Intervals {
		x := float64(iv.Unix - t0)
		c := iv.Counts
		for i, v := range []int64{c.Committed, c.Due, c.Rejections, c.Errors, c.Dropped} {
			ss[i].pts = append(ss[i].pts, [2]float64{x, float64(v)})
		}
	}
	if r.Run.Model != "open" {
		ss = append(ss[:1], ss[2:]...)
	}
	// Lines that stay at zero only crowd the chart.
	kept := ss[:0]
	for i, s := range ss {
		nonzero := false
		for _, p := range s.pts {
			nonzero = nonzero || p[1] != 0
		}
		if nonzero || i == 0 {
			kept = append(kept, s)
		}
	}
	return chart{title: "throughput per second", xLabel: "seconds since start", yMin0: true,
		yFmt: func(v float64) string { return fmt.Sprintf("%g", v) }, xFmt: secFmt, series: kept}.svg()
}

// distribution is HdrHistogram's percentile spectrum: latency against
// percentile on a "number of nines" axis.
func distribution(r *metrics.Result) template.HTML {
	var ss []series
	maxX := 1.0
	for _, n := range metrics.Latencies {
		h := r.Hist(n)
		if h.Count() == 0 {
			continue
		}
		s := series{name: n, color: colors[n]}
		top := math.Log10(float64(h.Count()))
		for _, b := range h.Spectrum(5) {
			x := top
			if b.Fraction < 1 {
				x = math.Min(-math.Log10(1-b.Fraction), top)
			}
			s.pts = append(s.pts, [2]float64{x, ms(b.Value)})
			maxX = math.Max(maxX, x)
		}
		ss = append(ss, s)
	}
	var ticks []float64
	for t := 0.0; t <= math.Ceil(maxX); t++ {
		ticks = append(ticks, t)
	}
	nines := func(x float64) string {
		return fmt.Sprintf("%g%%", math.Round((1-math.Pow(10, -x))*100*1e4)/1e4)
	}
	return chart{title: "latency by percentile", xLabel: "percentile", yFmt: msFmt, xFmt: nines, xTicks: ticks, series: ss, height: 320}.svg()
}

type page struct {
	Title       string
	Describe    string
	Result      *metrics.Result
	Rows        []Row
	Percentiles []string
	Errors      string
	Rejections  string
	Charts      []template.HTML
	Distribute  template.HTML
	Throughput  template.HTML
	Generated   string
}

// HTML writes the self-contained report page.
func HTML(w io.Writer, r *metrics.Result) error {
	p := page{Title: "kbkit loadgen: " + r.Run.Workload, Describe: Describe(r), Result: r, Rows: Rows(r),
		Errors: metrics.Kinds(r.Errors), Rejections: metrics.Kinds(r.Rejections),
		Throughput: throughput(r), Distribute: distribution(r), Generated: time.Now().UTC().Format(time.RFC3339)}
	for _, pc := range Percentiles {
		p.Percentiles = append(p.Percentiles, fmt.Sprintf("p%g", pc))
	}
	for _, n := range metrics.IntervalLatencies {
		p.Charts = append(p.Charts, latencyOverTime(r, n))
	}
	return tmpl.Execute(w, p)
}

var tmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"dur": Dur,
	"f1":  func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"utc": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:960px;color:#222;padding:0 12px}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.sub{color:#555;margin:0 0 16px}
table{border-collapse:collapse;margin:6px 0} td,th{padding:3px 10px;border-bottom:1px solid #eee;text-align:right}
th{background:#f6f6f6} td:first-child,th:first-child{text-align:left}
.pass{color:#137333;font-weight:600} .fail{color:#c5221f;font-weight:600}
svg.chart{max-width:100%;height:auto;display:block;margin:8px 0 14px;background:#fff}
svg .grid{stroke:#eee} svg text{font:11px system-ui,sans-serif;fill:#555}
svg .yt{text-anchor:end} svg .xt{text-anchor:middle} svg .xl{text-anchor:middle}
svg .ct{font-weight:600;fill:#222;font-size:12px} svg .lg{fill:#333}
.kv td{text-align:left} footer{color:#888;font-size:12px;margin-top:28px}
</style></head><body>
<h1>{{.Title}}</h1>
<p class="sub">{{.Describe}}<br>run {{.Result.Run.RunID}}, seed {{.Result.Run.Seed}}, load from {{utc .Result.Start}} for {{f1 .Result.Seconds}} s</p>

<h2>Summary</h2>
<table>
<tr><th>latency</th><th>count</th>{{range .Percentiles}}<th>{{.}}</th>{{end}}<th>max</th></tr>
{{range .Rows}}<tr><td>{{.Name}}</td><td>{{.Count}}</td>{{range .Pcts}}<td>{{dur .}}</td>{{end}}<td>{{dur .Max}}</td></tr>
{{end}}</table>
{{with .Result.Counts}}
<table class="kv">
<tr><td>operations</td><td>{{.Commands}}</td><td>committed</td><td>{{.Committed}} ({{f1 $.Result.Rate}}/s)</td></tr>
<tr><td>rejected by the server</td><td>{{.Rejections}}</td><td>refused by the window</td><td>{{.LocalRejections}}</td></tr>
<tr><td>due (open model)</td><td>{{.Due}}</td><td>dropped</td><td>{{.Dropped}}</td></tr>
<tr><td>errors</td><td>{{.Errors}}</td><td>retries</td><td>{{.Retries}}</td></tr>
<tr><td>refetches</td><td>{{.Refetches}}</td><td>echoes received</td><td>{{.Echoes}}</td></tr>
<tr><td>WebSocket connects</td><td>{{.Connects}}</td><td>reconnects</td><td>{{.Reconnects}}</td></tr>
</table>{{end}}
<table class="kv">
<tr><td>errors by kind</td><td>{{if .Errors}}{{.Errors}}{{else}}none{{end}}</td></tr>
<tr><td>rejections by code</td><td>{{if .Rejections}}{{.Rejections}}{{else}}none{{end}}</td></tr>
</table>
{{if .Result.Checks}}<h2>Thresholds</h2>
<table><tr><th>threshold</th><th>actual</th><th>result</th></tr>
{{range .Result.Checks}}<tr><td>{{.Expr}}</td><td>{{.Actual}}</td>{{if .Pass}}<td class="pass">pass</td>{{else}}<td class="fail">FAIL</td>{{end}}</tr>
{{end}}</table>{{end}}

<h2>Latency over time</h2>
<p class="sub">Per wall-clock second (so that shards align); the first and last seconds of the load are partial.</p>
{{range .Charts}}{{.}}{{end}}
<h2>Throughput over time</h2>
{{.Throughput}}
<h2>Latency distribution</h2>
{{.Distribute}}
<p class="sub">commit: POST kb.command to its response. echo: intended start to the echo at the sending window.
fanout: intended start to the echo at every other window of the page. convergence: end of the load to each window
reaching its page's head. Open model latencies count from each operation's intended start (no coordinated omission).</p>
<footer>shards {{range .Result.Shards}}{{.}} {{end}}· generated {{.Generated}} by kbkit loadgen report</footer>
</body></html>
`))
