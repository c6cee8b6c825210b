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

// distribution is HdrHistogram's percentile spectrum of every latency the
// run measured.
func distribution(r *metrics.Result) template.HTML {
	var ss []series
	for _, n := range metrics.Latencies {
		h := r.Hist(n)
		if h.Count() == 0 {
			continue
		}
		ss = append(ss, series{name: n, color: colors[n], pts: spectrum(h)})
	}
	return spectrumChart("latency by percentile", ss, 320)
}

// spectrum is h's percentile spectrum as chart points: latency in
// milliseconds against the "number of nines" of its percentile
// (-log10(1-fraction)), the last point at log10 of the count.
func spectrum(h *metrics.Hist) [][2]float64 {
	var pts [][2]float64
	top := math.Log10(float64(h.Count()))
	for _, b := range h.Spectrum(5) {
		x := top
		if b.Fraction < 1 {
			x = math.Min(-math.Log10(1-b.Fraction), top)
		}
		pts = append(pts, [2]float64{x, ms(b.Value)})
	}
	return pts
}

// spectrumChart draws spectra (of spectrum's points): latency against
// percentile on a "number of nines" axis, a tick per nine (0%, 90%, 99%,
// ...) up to the largest point's, and at least to 90%.
func spectrumChart(title string, ss []series, height int) template.HTML {
	maxX := 1.0
	for _, s := range ss {
		for _, p := range s.pts {
			maxX = math.Max(maxX, p[0])
		}
	}
	var ticks []float64
	for t := 0.0; t <= math.Ceil(maxX); t++ {
		ticks = append(ticks, t)
	}
	nines := func(x float64) string {
		return fmt.Sprintf("%g%%", math.Round((1-math.Pow(10, -x))*100*1e4)/1e4)
	}
	return chart{title: title, xLabel: "percentile", yFmt: msFmt, xFmt: nines, xTicks: ticks, series: ss, height: height}.svg()
}

type page struct {
	Title       string
	Describe    string
	Result      *metrics.Result
	Rows        []Row
	Percentiles []string
	Errors      string
	Rejections  string
	// RejectionNote explains rejections a shared page makes by design.
	RejectionNote string
	Charts        []template.HTML
	Distribute    template.HTML
	Throughput    template.HTML
	Troubles      template.HTML
	InFlight      template.HTML
	Peak          string
	Types         []TypeRow
	Generated     string
	CSS           template.CSS
	Script        template.JS
}

// HTML writes the self-contained report page.
func HTML(w io.Writer, r *metrics.Result) error {
	p := page{Title: "kbkit loadgen: " + r.Run.Workload, Describe: Describe(r), Result: r, Rows: Rows(r),
		Errors: metrics.Kinds(r.Errors), Rejections: metrics.Kinds(r.Rejections), RejectionNote: RejectionNote(r),
		Throughput: throughput(r), Distribute: distribution(r), Generated: time.Now().UTC().Format(time.RFC3339),
		Troubles: troubles(r), InFlight: inFlight(r), Peak: peakInFlight(r), Types: TypeRows(r), CSS: pageCSS, Script: tipScript}
	for _, pc := range Percentiles {
		p.Percentiles = append(p.Percentiles, fmt.Sprintf("p%g", pc))
	}
	for _, n := range metrics.IntervalLatencies {
		p.Charts = append(p.Charts, latencyOverTime(r, n))
	}
	return tmpl.Execute(w, p)
}

// peakInFlight is the largest sampled in-flight count, "n/a" if none.
func peakInFlight(r *metrics.Result) string {
	if !r.InFlightSampled {
		return "n/a"
	}
	var peak int64
	for _, iv := range r.Intervals {
		peak = max(peak, iv.InFlight)
	}
	return fmt.Sprint(peak)
}

// pageCSS is shared by the report and the comparison.
const pageCSS = `body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:960px;color:#222;padding:0 12px}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.sub{color:#555;margin:0 0 16px}
.warn{color:#a00;font-weight:bold}
table{border-collapse:collapse;margin:6px 0} td,th{padding:3px 10px;border-bottom:1px solid #eee;text-align:right;white-space:nowrap}
th{background:#f6f6f6} td:first-child,th:first-child{text-align:left}
.pass{color:#137333;font-weight:600} .fail{color:#c5221f;font-weight:600} .na{color:#999}
.better{background:#dcf5dc;font-weight:600} .worse{color:#a33}
svg.chart{max-width:100%;height:auto;display:block;margin:8px 0 14px;background:#fff}
svg .grid{stroke:#eee} svg text{font:11px system-ui,sans-serif;fill:#555}
svg .yt{text-anchor:end} svg .xt{text-anchor:middle} svg .xl{text-anchor:middle}
svg .ct{font-weight:600;fill:#222;font-size:12px} svg .lg{fill:#333} svg .note{fill:#888;font-size:10px}
svg .band.partial{fill:#000;fill-opacity:.05} svg .band.drain{fill:#000;fill-opacity:.12}
svg .hov{fill:#000;fill-opacity:0} svg .hov:hover{fill-opacity:.06}
#tip{position:fixed;display:none;z-index:9;background:#fff;border:1px solid #999;box-shadow:0 2px 6px rgba(0,0,0,.2);
 padding:4px 8px;font:12px/1.35 ui-monospace,monospace;white-space:pre;pointer-events:none}
.kv td{text-align:left} .wide{overflow-x:auto;max-width:100%} .types td,.types th{padding:3px 5px}
footer{color:#888;font-size:12px;margin-top:28px}`

// tipScript shows a chart's hover values at once (the SVG <title> is
// the fallback without script).
const tipScript = `(function(){var t=document.getElementById("tip");
document.addEventListener("mousemove",function(e){var h=e.target.closest&&e.target.closest("[data-tip]");
if(!h){t.style.display="none";return;}t.textContent=h.getAttribute("data-tip");t.style.display="block";
t.style.left=Math.min(e.clientX+14,window.innerWidth-t.offsetWidth-8)+"px";t.style.top=(e.clientY+14)+"px";});})();`

var tmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"dur": Dur,
	"f1":  func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"utc": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>{{.CSS}}</style></head><body>
<h1>{{.Title}}</h1>
<p class="sub">{{.Describe}}<br>run {{.Result.Run.RunID}}, seed {{.Result.Run.Seed}}, load from {{utc .Result.Start}} for {{f1 .Result.Seconds}} s</p>
{{if .Result.PausedSeconds}}<p class="warn">PAUSED: the machine stood still for {{f1 .Result.PausedSeconds}} s during the load (the wall clock ran that far ahead of the monotonic clock); the seconds above leave it out, but the figures around it are not those of a running machine: run the load again.</p>{{end}}

<h2>Summary</h2>
<table>
<tr><th>latency</th><th>count</th>{{range .Percentiles}}<th>{{.}}</th>{{end}}<th>max</th></tr>
{{range .Rows}}<tr><td>{{.Name}}</td><td>{{.Count}}</td>{{if .Count}}{{range .Pcts}}<td>{{dur .}}</td>{{end}}<td>{{dur .Max}}</td>{{else}}{{range .Pcts}}<td class="na">n/a</td>{{end}}<td class="na">n/a</td>{{end}}</tr>
{{end}}</table>
{{with .Result.Counts}}
<table class="kv">
<tr><td>operations</td><td>{{.Commands}}</td><td>committed</td><td>{{.Committed}} ({{f1 $.Result.Rate}}/s)</td></tr>
<tr><td>rejected by the server</td><td>{{.Rejections}}</td><td>refused by the window</td><td>{{.LocalRejections}}</td></tr>
<tr><td>due (open model)</td><td>{{.Due}}</td><td>dropped</td><td>{{.Dropped}}</td></tr>
<tr><td>errors</td><td>{{.Errors}}</td><td>retries</td><td>{{.Retries}}</td></tr>
<tr><td>refetches</td><td>{{.Refetches}}</td><td>echoes received</td><td>{{.Echoes}}</td></tr>
<tr><td>WebSocket connects</td><td>{{.Connects}}</td><td>reconnects</td><td>{{.Reconnects}}</td></tr>
<tr><td>peak in flight</td><td{{if eq $.Peak "n/a"}} class="na"{{end}}>{{$.Peak}}</td><td></td><td></td></tr>
</table>{{end}}
<table class="kv">
<tr><td>errors by kind</td><td>{{if .Errors}}{{.Errors}}{{else}}none{{end}}</td></tr>
<tr><td>rejections by code</td><td>{{if .Rejections}}{{.Rejections}}{{else}}none{{end}}</td></tr>
</table>
{{with .RejectionNote}}<p class="sub" id="rejection-note">Rejections: {{.}}.</p>{{end}}
<h2>By operation type</h2>
{{if .Types}}<div class="wide"><table class="types">
<tr><th>type</th><th>operations</th><th>committed</th><th>rejected</th><th>refused</th><th>errors</th><th>commit p50</th><th>p90</th><th>p99</th><th>max</th><th>echo p50</th><th>p99</th></tr>
{{range .Types}}<tr><td>{{.Type}}</td><td>{{.Commands}}</td><td>{{.Committed}}</td><td>{{.Rejections}}</td><td>{{.Refused}}</td><td>{{.Errors}}</td>
{{if .HasCommit}}<td>{{dur .CommitP50}}</td><td>{{dur .CommitP90}}</td><td>{{dur .CommitP99}}</td><td>{{dur .CommitMax}}</td>{{else}}<td class="na">n/a</td><td class="na">n/a</td><td class="na">n/a</td><td class="na">n/a</td>{{end}}
{{if .HasEcho}}<td>{{dur .EchoP50}}</td><td>{{dur .EchoP99}}</td>{{else}}<td class="na">n/a</td><td class="na">n/a</td>{{end}}</tr>
{{end}}</table></div>
<p class="sub">Latencies per type to 2 significant digits; refused: edits the window refused before sending.</p>
{{else}}<p class="sub na">n/a: this result (or a shard merged into it) has no per-type breakdown.</p>{{end}}
{{if .Result.Checks}}<h2>Thresholds</h2>
<table><tr><th>threshold</th><th>actual</th><th>result</th></tr>
{{range .Result.Checks}}<tr><td>{{.Expr}}</td><td>{{.Actual}}</td>{{if .Pass}}<td class="pass">pass</td>{{else}}<td class="fail">FAIL</td>{{end}}</tr>
{{end}}</table>{{end}}

<h2>Latency over time</h2>
<p class="sub">Per wall-clock second (so that shards align); the partial first and last seconds and the drain after the load are shaded. Hover a chart for its values.</p>
{{range .Charts}}{{.}}{{end}}
<h2>Throughput over time</h2>
{{.Throughput}}
<h2>Errors, drops and recovery over time</h2>
{{.Troubles}}
<h2>Work in flight</h2>
{{if .InFlight}}{{.InFlight}}{{else}}<p class="sub na">n/a: in-flight work was not sampled in this result (or in a shard merged into it).</p>{{end}}
<h2>Latency distribution</h2>
{{.Distribute}}
<p class="sub">commit: POST kb.command to its response. echo: intended start to the echo at the sending window.
fanout: intended start to the echo at every other window of the page. convergence: end of the load to each window
reaching its page's head. Open model latencies count from each operation's intended start (no coordinated omission).</p>
<div id="tip"></div><script>{{.Script}}</script>
<footer>shards {{range .Result.Shards}}{{.}} {{end}}· generated {{.Generated}} by kbkit loadgen report</footer>
</body></html>
`))
