package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
	"time"

	"github.com/subspace/kbkit/loadgen/metrics"
)

// Comparing two runs ("did my change make it faster"): every figure of A
// beside B's, the difference, and which run is better when lower (or
// higher) is better and they differ by more than Noise.

// Noise is the relative difference under which two figures count as the
// same ("≈").
const Noise = 0.01

// CompareRow is one figure of two runs.
type CompareRow struct {
	Name string
	// A and B are the formatted figures ("n/a" when a run cannot say).
	A, B string
	// Delta is B - A with its relative size ("" when either is n/a).
	Delta string
	// Better is "A", "B", "≈" (within Noise), "=" (equal) or "" (no
	// better direction, or n/a).
	Better string
}

type figure struct {
	name  string
	get   func(r *metrics.Result) (float64, bool)
	fmt   func(float64) string
	delta func(float64) string
	// lower: lower is better; higher: higher is better; neither: neutral.
	lower, higher bool
}

func count(v float64) string { return fmt.Sprintf("%.0f", v) }

func signed(f func(float64) string) func(float64) string {
	return func(v float64) string {
		if v < 0 {
			return "-" + f(-v)
		}
		return "+" + f(v)
	}
}

func durMs(v float64) string { return Dur(time.Duration(v * float64(time.Millisecond))) }

func figures(a, b *metrics.Result) []figure {
	counter := func(name string, get func(metrics.Counts) int64, lower bool) figure {
		return figure{name: name, lower: lower, fmt: count, delta: signed(count),
			get: func(r *metrics.Result) (float64, bool) { return float64(get(r.Counts)), true }}
	}
	fs := []figure{
		{name: "rate (committed/s)", higher: true, fmt: func(v float64) string { return fmt.Sprintf("%.1f", v) },
			delta: signed(func(v float64) string { return fmt.Sprintf("%.1f", v) }),
			get:   func(r *metrics.Result) (float64, bool) { return r.Rate(), r.Seconds() > 0 }},
		counter("operations", func(c metrics.Counts) int64 { return c.Commands }, false),
		counter("committed", func(c metrics.Counts) int64 { return c.Committed }, false),
		counter("rejected", func(c metrics.Counts) int64 { return c.Rejections }, false),
		counter("errors", func(c metrics.Counts) int64 { return c.Errors }, true),
		counter("dropped", func(c metrics.Counts) int64 { return c.Dropped }, true),
		counter("retries", func(c metrics.Counts) int64 { return c.Retries }, true),
		counter("reconnects", func(c metrics.Counts) int64 { return c.Reconnects }, true),
		counter("refetches", func(c metrics.Counts) int64 { return c.Refetches }, true),
		{name: "peak in flight", fmt: count, delta: signed(count), get: func(r *metrics.Result) (float64, bool) {
			if !r.InFlightSampled {
				return 0, false
			}
			var p int64
			for _, iv := range r.Intervals {
				p = max(p, iv.InFlight)
			}
			return float64(p), true
		}},
		{name: "cpu per committed command", lower: true, fmt: durMs, delta: signed(durMs), get: func(r *metrics.Result) (float64, bool) {
			if r.CPUSeconds <= 0 || r.Counts.Committed == 0 {
				return 0, false
			}
			return r.CPUSeconds * 1000 / float64(r.Counts.Committed), true
		}},
	}
	stat := func(h *metrics.Hist, p float64) time.Duration {
		if p > 100 {
			return h.Max()
		}
		return h.Quantile(p)
	}
	for _, n := range metrics.Latencies {
		for _, p := range []float64{50, 90, 99, 99.9, 101} {
			label := fmt.Sprintf("%s p%g", n, p)
			if p > 100 {
				label = n + " max"
			}
			fs = append(fs, figure{name: label, lower: true, fmt: durMs, delta: signed(durMs), get: func(r *metrics.Result) (float64, bool) {
				h := r.Hist(n)
				return ms(stat(h, p)), h.Count() > 0
			}})
		}
	}
	for _, t := range a.TypeNames() {
		if b.Types[t] == nil {
			continue
		}
		for _, p := range []float64{50, 99} {
			fs = append(fs, figure{name: fmt.Sprintf("%s commit p%g", t, p), lower: true, fmt: durMs, delta: signed(durMs),
				get: func(r *metrics.Result) (float64, bool) {
					ts := r.Types[t]
					if ts == nil || ts.Commit.Count() == 0 {
						return 0, false
					}
					return ms(ts.Commit.Quantile(p)), true
				}})
		}
	}
	return fs
}

// Compare computes the rows of two runs' comparison.
func Compare(a, b *metrics.Result) []CompareRow {
	var out []CompareRow
	for _, f := range figures(a, b) {
		va, oka := f.get(a)
		vb, okb := f.get(b)
		row := CompareRow{Name: f.name, A: "n/a", B: "n/a"}
		if oka {
			row.A = f.fmt(va)
		}
		if okb {
			row.B = f.fmt(vb)
		}
		if oka && okb {
			d := vb - va
			row.Delta = f.delta(d)
			if va != 0 {
				row.Delta += fmt.Sprintf(" (%+.1f%%)", 100*d/va)
			}
			rel := math.Abs(d) / math.Max(math.Abs(va), math.Abs(vb))
			switch {
			case !f.lower && !f.higher:
			case d == 0:
				row.Better = "="
			case rel < Noise:
				row.Better = "≈"
			case (f.lower && vb < va) || (f.higher && vb > va):
				row.Better = "B"
			default:
				row.Better = "A"
			}
		}
		out = append(out, row)
	}
	return out
}

// CompareText writes the comparison as a table.
func CompareText(w io.Writer, nameA string, a *metrics.Result, nameB string, b *metrics.Result) error {
	var sb strings.Builder
	fmt.Fprintf(&sb, "kbkit loadgen compare\n  A: %s: %s\n  B: %s: %s\n\n", nameA, Describe(a), nameB, Describe(b))
	if d := ShapeDiff(a, b); len(d) > 0 {
		fmt.Fprintf(&sb, "warning: the runs differ in shape (%s): their figures are not a before and after\n\n", strings.Join(d, ", "))
	}
	for _, r := range []struct {
		name string
		res  *metrics.Result
	}{{"A", a}, {"B", b}} {
		if r.res.PausedSeconds > 0 {
			fmt.Fprintf(&sb, "warning: the machine stood still for %.1fs during run %s (paused_seconds): its figures are not those of a running machine\n\n", r.res.PausedSeconds, r.name)
		}
	}
	fmt.Fprintf(&sb, "%-28s %12s %12s  %-22s %s\n", "", "A", "B", "B − A", "better")
	wins := map[string]int{}
	for _, r := range Compare(a, b) {
		fmt.Fprintf(&sb, "%-28s %12s %12s  %-22s %s\n", r.Name, r.A, r.B, r.Delta, r.Better)
		wins[r.Better]++
	}
	fmt.Fprintf(&sb, "\nbetter: A on %d figures, B on %d, the same (= or within %.0f%%) on %d\n", wins["A"], wins["B"], 100*Noise, wins["="]+wins["≈"])
	_, err := io.WriteString(w, sb.String())
	return err
}

type comparePage struct {
	Title                string
	NameA, NameB         string
	DescA, DescB         string
	Rows                 []CompareRow
	Spectra, Time        []template.HTML
	CSS                  template.CSS
	Script               template.JS
	Generated            string
	WinsA, WinsB, WinsEq int
	Shape                []string // how the runs differ in shape (ShapeDiff)
}

// CompareHTML writes the comparison as a self-contained page: the table,
// the percentile spectra of both runs overlaid (A solid, B dashed), and
// their time series side by side on seconds since each run's start.
func CompareHTML(w io.Writer, nameA string, a *metrics.Result, nameB string, b *metrics.Result) error {
	p := comparePage{Title: "kbkit loadgen compare", NameA: nameA, NameB: nameB, DescA: Describe(a), DescB: Describe(b),
		Rows: Compare(a, b), CSS: pageCSS, Script: tipScript, Generated: time.Now().UTC().Format(time.RFC3339), Shape: ShapeDiff(a, b)}
	for _, r := range p.Rows {
		switch r.Better {
		case "A":
			p.WinsA++
		case "B":
			p.WinsB++
		case "=", "≈":
			p.WinsEq++
		}
	}
	for _, n := range metrics.Latencies {
		p.Spectra = append(p.Spectra, spectrumAB(n, a, b))
	}
	two := func(title string, yFmt func(float64) string, get func(r *metrics.Result) series) template.HTML {
		sa, sb := get(a), get(b)
		sa.name, sb.name = "A "+sa.name, "B "+sb.name
		sa.color, sb.color = "#1f77b4", "#d62728"
		sb.dash = true
		return chart{title: title, xLabel: "seconds since each run's start", yMin0: true, yFmt: yFmt, xFmt: secFmt,
			series: []series{sa, sb}}.svg()
	}
	p.Time = append(p.Time,
		two("committed per second", rateFmt, func(r *metrics.Result) series { return throughputSeries(r) }),
		two("commit p99 per second", msFmt, func(r *metrics.Result) series { return p99Series(r, metrics.Commit) }),
		two("fanout p99 per second", msFmt, func(r *metrics.Result) series { return p99Series(r, metrics.Fanout) }),
		two("errors per second", rateFmt, func(r *metrics.Result) series {
			return rates(r, []string{"errors/s"}, []string{""}, func(iv metrics.Interval) []int64 { return []int64{iv.Counts.Errors} })[0]
		}))
	return compareTmpl.Execute(w, p)
}

func throughputSeries(r *metrics.Result) series {
	return rates(r, []string{"committed/s"}, []string{""}, func(iv metrics.Interval) []int64 { return []int64{iv.Counts.Committed} })[0]
}

func p99Series(r *metrics.Result, name string) series {
	s := series{name: name + " p99"}
	for _, iv := range r.Intervals {
		if snap, ok := iv.Latency[name]; ok && snap.Total > 0 {
			if h, err := snap.Hist(); err == nil {
				s.pts = append(s.pts, [2]float64{xOf(r, iv.Unix), ms(h.Quantile(99))})
			}
		}
	}
	return s
}

// spectrumAB overlays one metric's percentile spectrum of both runs.
func spectrumAB(name string, a, b *metrics.Result) template.HTML {
	var ss []series
	for i, r := range []*metrics.Result{a, b} {
		h := r.Hist(name)
		s := series{name: []string{"A ", "B "}[i] + name, color: colors[name], dash: i == 1}
		if h.Count() == 0 {
			s.name += " (n/a)"
		} else {
			s.pts = spectrum(h)
		}
		ss = append(ss, s)
	}
	return spectrumChart(name+" latency by percentile (A solid, B dashed)", ss, 260)
}

var compareTmpl = template.Must(template.New("compare").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>{{.CSS}}</style></head><body>
<h1>{{.Title}}</h1>
<p class="sub"><b>A</b> {{.NameA}}: {{.DescA}}<br><b>B</b> {{.NameB}}: {{.DescB}}</p>
{{if .Shape}}<p class="fail" id="shape">The runs differ in shape ({{range $i, $d := .Shape}}{{if $i}}, {{end}}{{$d}}{{end}}): their figures are not a before and after.</p>
{{end}}<p>B is better on <b>{{.WinsB}}</b> figures, A on <b>{{.WinsA}}</b>, the two the same (equal or within 1%) on {{.WinsEq}}.</p>
<h2>Summary</h2>
<table id="compare">
<tr><th>figure</th><th>A</th><th>B</th><th>B − A</th><th>better</th></tr>
{{range .Rows}}<tr data-better="{{.Better}}"><td>{{.Name}}</td><td{{if eq .Better "A"}} class="better"{{else if eq .A "n/a"}} class="na"{{end}}>{{.A}}</td><td{{if eq .Better "B"}} class="better"{{else if eq .B "n/a"}} class="na"{{end}}>{{.B}}</td><td>{{.Delta}}</td><td>{{.Better}}</td></tr>
{{end}}</table>
<h2>Latency distributions</h2>
{{range .Spectra}}{{.}}{{end}}
<h2>Over time</h2>
<p class="sub">Per wall-clock second, from each run's start; rates per second of load covered. Hover a chart for its values.</p>
{{range .Time}}{{.}}{{end}}
<div id="tip"></div><script>{{.Script}}</script>
<footer>generated {{.Generated}} by kbkit loadgen compare</footer>
</body></html>
`))
