package findmax

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	lgreport "github.com/subspace/kbkit/loadgen/report"
)

// Describe is the search in one line.
func Describe(r *Result) string {
	ri := r.Run
	s := fmt.Sprintf("%s, %d editors, %d page", ri.Workload, ri.Editors, ri.Pages)
	if ri.Pages != 1 {
		s += "s"
	}
	s += fmt.Sprintf(" × %d windows", ri.WindowsPerPage)
	if e := r.Verdict.Editors; e > ri.Editors {
		s += fmt.Sprintf(" at first (grown to %d editors)", e)
	}
	s += fmt.Sprintf(", commands over %s, steps of %s", ri.Commands, ri.Duration)
	if ri.Warmup != "" {
		s += " after " + ri.Warmup + " of warm-up"
	}
	return s + " against " + ri.Server
}

// Headline is the verdict in one line.
func Headline(r *Result) string {
	v := r.Verdict
	if v.Sustainable == 0 && v.Next > 0 {
		return fmt.Sprintf("sustainable: none (the lowest step, %g/s, broke %s)", v.Next, v.Broken)
	}
	if v.Sustainable == 0 {
		return "sustainable: none"
	}
	s := fmt.Sprintf("sustainable: %g/s", v.Sustainable)
	if v.LowerBound {
		s = fmt.Sprintf("sustainable: at least %g/s", v.Sustainable)
	}
	if v.Next > 0 {
		s += fmt.Sprintf(" (the next step, %g/s, broke %s)", v.Next, v.Broken)
	}
	return s
}

func cores(v float64) string { return fmt.Sprintf("%.2f", v) }

// stepRow is a step's cells, shared by the text and the page.
func stepRow(i int, s Step) []string {
	res := "ok"
	if !s.Pass {
		res = "FAIL " + s.Broken
	}
	if s.Generator.Limit != "" {
		res += " [" + s.Generator.Limit + " ran out]"
	}
	if s.MachineSaturated {
		res += " [machine busy]"
	}
	if s.PausedSeconds > 0 {
		res += fmt.Sprintf(" [PAUSED %.1fs]", s.PausedSeconds)
	}
	gen := cores(s.Generator.Cores) + "/" + fmt.Sprintf("%g", s.Generator.Usable)
	srv := "n/a"
	if s.Generator.WithServer {
		srv = "in gen"
	} else if s.ServerCores != nil {
		srv = cores(*s.ServerCores)
	}
	mach, others := "n/a", "n/a"
	if s.Machine != nil {
		mach = fmt.Sprintf("%.0f%% of %d", 100*s.Machine.Busy/float64(s.Machine.Cores), s.Machine.Cores)
		others = cores(s.Machine.Others)
	}
	eds := "n/a"
	if s.Editors > 0 {
		eds = fmt.Sprint(s.Editors)
	}
	return []string{fmt.Sprint(i + 1), s.Stage, eds, fmt.Sprintf("%g", s.Rate), fmt.Sprintf("%.1f", s.Achieved),
		fmt.Sprintf("%d/%d", s.Committed, s.Due), fmt.Sprint(s.Dropped), fmtMs(s.CommitP99Ms), fmtMs(s.FanoutP99Ms),
		fmt.Sprint(s.PeakInFlight), gen, fmtMs(s.Generator.WaitP99Ms), srv, mach, others, res}
}

var stepHeader = []string{"step", "stage", "editors", "target/s", "achieved/s", "committed/due", "dropped", "commit p99", "fanout p99",
	"in flight", "gen cpu", "gen wait p99", "server cpu", "machine", "others", "result"}

// Text writes the search's report: the objective, the step table and the
// verdict.
func Text(w io.Writer, r *Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "kbkit loadgen find-max: %s\n", Describe(r))
	fmt.Fprintf(&b, "objective: %s\n\n", strings.Join(r.Objective, ", "))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(stepHeader, "\t"))
	for i, s := range r.Steps {
		fmt.Fprintln(tw, strings.Join(stepRow(i, s), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(&b, "\n%s\n", Headline(r))
	if r.Verdict.LimitedBy != "" {
		fmt.Fprintf(&b, "limited by %s\n", r.Verdict.Why)
	} else {
		fmt.Fprintf(&b, "%s\n", r.Verdict.Why)
	}
	if g := r.Verdict.GeneratorRanOut; g > 0 {
		fmt.Fprintf(&b, "%s\n", shortWords(r))
	}
	if w := editorWords(r); w != "" {
		fmt.Fprintf(&b, "%s\n", w)
	}
	fmt.Fprintf(&b, "%d steps in %s\n", len(r.Steps), r.End.Sub(r.Start).Round(time.Second))
	_, err := io.WriteString(w, b.String())
	return err
}

// shortWords says in how many steps the generator was short of CPU.
func shortWords(r *Result) string {
	n := 0
	for _, s := range r.Steps {
		if s.Generator.Limit == LimitGenerator || s.Generator.Limit == LimitShared {
			n++
		}
	}
	return fmt.Sprintf("the generator was short of CPU in %d of %d steps (the lowest at %g/s): their figures measure the generator as much as the server",
		n, len(r.Steps), r.Verdict.GeneratorRanOut)
}

// editorWords says how the editors grew during the search ("" when they
// did not).
func editorWords(r *Result) string {
	start, end := r.Run.Editors, r.Verdict.Editors
	if end <= start {
		return ""
	}
	reruns := 0
	for i := 1; i < len(r.Steps); i++ {
		if r.Steps[i].Rate == r.Steps[i-1].Rate && r.Steps[i].Editors > r.Steps[i-1].Editors {
			reruns++
		}
	}
	return fmt.Sprintf("editors: %d at the start, %d at the end (--max-editors %d): %d steps whose editors all were busy with the latencies held ran again with twice as many",
		start, end, r.Plan.MaxEditors, reruns)
}

// Write encodes the result as JSON.
func (r *Result) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Read decodes a result, refusing unknown fields and other versions.
func Read(rd io.Reader) (*Result, error) {
	dec := json.NewDecoder(rd)
	dec.DisallowUnknownFields()
	var r Result
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("findmax: decode result: %w", err)
	}
	if r.Version != Version {
		return nil, fmt.Errorf("findmax: result version %d, want %d", r.Version, Version)
	}
	if len(r.Steps) == 0 {
		return nil, errors.New("findmax: a result with no step")
	}
	return &r, nil
}

// WriteFile writes the JSON to path.
func (r *Result) WriteFile(path string) error {
	var b bytes.Buffer
	if err := r.Write(&b); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// byRate is the steps in rate order (a point per rate: the last step run
// at it).
func byRate(r *Result) []Step {
	seen := map[float64]int{}
	var out []Step
	for _, s := range r.Steps {
		if i, ok := seen[s.Rate]; ok {
			out[i] = s
			continue
		}
		seen[s.Rate] = len(out)
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Rate < out[j].Rate })
	return out
}

// HTML writes a self-contained page: the verdict, achieved against target,
// the p99 latencies and the CPU of generator, server and the rest of the
// machine per step, and the step table.
func HTML(w io.Writer, r *Result) error {
	steps := byRate(r)
	line := func(name, color string, y func(Step) (float64, bool)) lgreport.Line {
		l := lgreport.Line{Name: name, Color: color}
		for _, s := range steps {
			if v, ok := y(s); ok {
				l.Points = append(l.Points, [2]float64{s.Rate, v})
			}
		}
		return l
	}
	rate := func(v float64) string { return fmt.Sprintf("%.4g/s", v) }
	x := "target operations/s"
	throughput := lgreport.LineChart("Achieved against target (committed/s)", x, rate, []lgreport.Line{
		line("target", "#999", func(s Step) (float64, bool) { return s.Rate, true }),
		line("achieved", "#1a73e8", func(s Step) (float64, bool) { return s.Achieved, true }),
	})
	pos := func(f func(Step) float64) func(Step) (float64, bool) {
		return func(s Step) (float64, bool) { v := f(s); return v, v >= 0 }
	}
	latency := lgreport.LineChart("p99 latency per step", x, fmtMs, []lgreport.Line{
		line("commit p99", "#1a73e8", pos(func(s Step) float64 { return s.CommitP99Ms })),
		line("fanout p99", "#e8710a", pos(func(s Step) float64 { return s.FanoutP99Ms })),
		line("generator's wait for a CPU, p99", "#c5221f", pos(func(s Step) float64 { return s.Generator.WaitP99Ms })),
	})
	genName := "generator"
	if len(steps) > 0 && steps[0].Generator.WithServer {
		genName = "generator and embedded server"
	}
	cpuLines := []lgreport.Line{
		line(genName, "#1a73e8", func(s Step) (float64, bool) { return s.Generator.Cores, true }),
		line("server", "#137333", func(s Step) (float64, bool) {
			if s.ServerCores == nil {
				return 0, false
			}
			return *s.ServerCores, true
		}),
		line("others on the machine", "#999", func(s Step) (float64, bool) {
			if s.Machine == nil {
				return 0, false
			}
			return s.Machine.Others, true
		}),
	}
	cpu := lgreport.LineChart("CPU per step (cores)", x, func(v float64) string { return fmt.Sprintf("%.2f", v) }, cpuLines)
	short := ""
	if r.Verdict.GeneratorRanOut > 0 {
		short = shortWords(r)
	}
	var rows [][]string
	for i, s := range r.Steps {
		rows = append(rows, stepRow(i, s))
	}
	return page.Execute(w, map[string]any{"R": r, "Describe": Describe(r), "Headline": Headline(r), "CSS": lgreport.PageCSS(),
		"Charts": []template.HTML{throughput, latency, cpu}, "Header": stepHeader, "Rows": rows,
		"Generated": time.Now().UTC().Format(time.RFC3339), "Short": short, "Editors": editorWords(r)})
}

var page = template.Must(template.New("findmax").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>kbkit loadgen find-max: {{.R.Run.Workload}}</title>
<style>{{.CSS}} body{max-width:1280px}</style></head><body>
<h1>kbkit loadgen find-max: {{.R.Run.Workload}}</h1>
<p class="sub">{{.Describe}}<br>objective: {{range $i, $o := .R.Objective}}{{if $i}}, {{end}}<code>{{$o}}</code>{{end}}</p>
<h2>Verdict</h2>
<p id="headline"><b>{{.Headline}}</b></p>
<p id="why">{{if .R.Verdict.LimitedBy}}Limited by {{end}}{{.R.Verdict.Why}}.</p>
{{with .Short}}<p class="warn" id="generator-short">{{.}}.</p>{{end}}
{{with .Editors}}<p id="editors">{{.}}.</p>{{end}}
<h2>Steps</h2>
<div class="wide"><table class="types" id="steps">
<tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table></div>
<p class="sub">editors: the virtual editors the step ran; gen cpu: the generator's process, cores used of those it can run on; gen wait p99: how long its goroutines waited, runnable, for a CPU;
server cpu: the server's process_cpu_seconds_total; machine: every core's busy share;
others: the machine's busy cores less the generator and a server on this machine.</p>
<h2>Per step</h2>
{{range .Charts}}{{.}}{{end}}
<footer>{{.R.Host.CPUs}} CPUs ({{.R.Host.OS}}/{{.R.Host.Arch}}, GOMAXPROCS {{.R.Host.GOMAXPROCS}}, {{.R.Host.Go}}) · {{len .R.Steps}} steps from {{.R.Start.UTC.Format "2006-01-02 15:04:05 UTC"}} · generated {{.Generated}} by kbkit loadgen find-max</footer>
</body></html>
`))
