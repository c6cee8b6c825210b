package pgfault

import (
	"fmt"
	"html/template"
	"io"

	"github.com/subspace/kbkit/loadgen/report"
)

// SoakText prints a soak's verdict: the failover figures, then each
// sampled series from its start to its end.
func SoakText(w io.Writer, r *Result) {
	s := r.Soak
	if s == nil {
		Text(w, r)
		return
	}
	fmt.Fprintf(w, "soak: %.0f s of editing (%d writers, %d pages) with %d link faults (%.0f s warm-up), %d audits, %d samples\n",
		s.Duration, r.Writers, r.Pages, s.Faults, s.Warmup, s.Audits, len(s.Samples))
	fmt.Fprintf(w, "  acknowledged %d, lost %d, misplaced %d, duplicated %d, seq reused %d, rejected %d, refused %d, converged %d of %d windows\n",
		r.Acknowledged, r.Lost, r.Misplaced, r.Duplicated, r.SeqReused, r.Rejected, r.Refused, r.Converged, r.Windows)
	if s.NotMeasurable != "" {
		fmt.Fprintf(w, "  growth: not measurable here: %s\n", s.NotMeasurable)
	} else {
		fmt.Fprintf(w, "  growth judged on the trend of %d healthy samples after the warm-up\n", s.Judged)
		fmt.Fprintf(w, "  %-22s %14s %14s %14s %14s %8s\n", "series", "start", "end", "trend, first", "trend, last", "growth")
	}
	for _, x := range s.Series {
		verdict := ""
		if !x.OK {
			verdict = "  FAIL"
		}
		fmt.Fprintf(w, "  %-22s %14.0f %14.0f %14.0f %14.0f %7.1f%%%s\n", x.Name, x.Start, x.End, x.First, x.Last, 100*x.Growth, verdict)
	}
	if r.OK() && s.NotMeasurable != "" {
		fmt.Fprintln(w, "PASS: nothing acknowledged was lost or duplicated; growth NOT MEASURABLE here (see above), not judged")
		return
	}
	if r.OK() {
		fmt.Fprintf(w, "PASS: nothing acknowledged was lost or duplicated; no series grew by more than %.0f %% after the warm-up\n", 100*MaxGrowth)
		return
	}
	fmt.Fprintln(w, "FAIL:")
	for _, f := range r.Findings {
		fmt.Fprintln(w, "  - "+f)
	}
}

var soakPage = template.Must(template.New("soak").Funcs(template.FuncMap{"pct": func(v float64) float64 { return 100 * v }}).Parse(`<!doctype html><html><head><meta charset="utf-8">
<title>kbkit soak</title><style>{{.CSS}}</style></head><body>
<h1>kbkit soak: {{if .OK}}<span class="pass">PASS</span>{{else}}<span class="fail">FAIL</span>{{end}}</h1>
<p class="sub">{{printf "%.0f" .R.Soak.Duration}} s of editing by {{.R.Writers}} writers on {{.R.Pages}} pages, {{.R.Soak.Faults}} faults of the link to Postgres, samples every few seconds; the first {{printf "%.0f" .R.Soak.Warmup}} s are the warm-up.</p>
<table class="kv"><tr><td>acknowledged</td><td>{{.R.Acknowledged}}</td></tr><tr><td>lost</td><td>{{.R.Lost}}</td></tr>
<tr><td>duplicated</td><td>{{.R.Duplicated}}</td></tr><tr><td>rejected, refused</td><td>{{.R.Rejected}}, {{.R.Refused}}</td></tr>
<tr><td>converged</td><td>{{.R.Converged}} of {{.R.Windows}} windows</td></tr></table>
<h2>Series</h2>{{if .R.Soak.NotMeasurable}}<p>Growth not measurable here, not judged: {{.R.Soak.NotMeasurable}}.</p>{{else}}<p class="sub">Growth: a trend line through the {{.R.Soak.Judged}} healthy samples after the warm-up, at the first and at the last of them.</p>{{end}}<table><tr><th>series</th><th>start</th><th>end</th><th>trend, first</th><th>trend, last</th><th>growth</th><th></th></tr>
{{range .R.Soak.Series}}<tr><td>{{.Name}}</td><td>{{printf "%.0f" .Start}}</td><td>{{printf "%.0f" .End}}</td><td>{{printf "%.0f" .First}}</td><td>{{printf "%.0f" .Last}}</td><td>{{printf "%.1f %%" (pct .Growth)}}</td><td>{{if .OK}}<span class="pass">ok</span>{{else}}<span class="fail">grew</span>{{end}}</td></tr>
{{end}}</table>
{{range .Charts}}{{.}}{{end}}
{{if .R.Findings}}<h2>Findings</h2><ul>{{range .R.Findings}}<li>{{.}}</li>{{end}}</ul>{{end}}
<footer>kbkit pg soak</footer></body></html>
`))

// SoakHTML writes the soak's page: the verdicts and a chart per figure,
// the server's and the generator's lines side by side.
func SoakHTML(w io.Writer, r *Result) error {
	if r.Soak == nil {
		return fmt.Errorf("failover: not a soak result")
	}
	line := func(name, color string, get func(Sample) float64) report.Line {
		l := report.Line{Name: name, Color: color}
		for _, s := range r.Soak.Samples {
			l.Points = append(l.Points, [2]float64{s.At, get(s)})
		}
		return l
	}
	mb := func(v float64) string { return fmt.Sprintf("%.0f MB", v) }
	n := func(v float64) string { return fmt.Sprintf("%.0f", v) }
	charts := []template.HTML{
		report.LineChart("resident memory", "seconds", mb, []report.Line{
			line("server", "#1a73e8", func(s Sample) float64 { return float64(s.Server.RSS) / (1 << 20) }),
			line("generator", "#e37400", func(s Sample) float64 { return float64(s.Generator.RSS) / (1 << 20) })}),
		report.LineChart("goroutines", "seconds", n, []report.Line{
			line("server", "#1a73e8", func(s Sample) float64 { return float64(s.Server.Goroutines) }),
			line("generator", "#e37400", func(s Sample) float64 { return float64(s.Generator.Goroutines) })}),
		report.LineChart("open connections (sockets)", "seconds", n, []report.Line{
			line("server", "#1a73e8", func(s Sample) float64 { return float64(s.Server.Sockets) }),
			line("generator", "#e37400", func(s Sample) float64 { return float64(s.Generator.Sockets) })}),
		report.LineChart("file descriptors", "seconds", n, []report.Line{
			line("server", "#1a73e8", func(s Sample) float64 { return float64(s.Server.FDs) }),
			line("generator", "#e37400", func(s Sample) float64 { return float64(s.Generator.FDs) })}),
	}
	return soakPage.Execute(w, map[string]any{"R": r, "OK": r.OK(), "CSS": report.PageCSS(), "Charts": charts})
}
