package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/subspace/kbkit/loadgen/metrics"
)

// Percentiles are the columns of the summary table.
var Percentiles = []float64{50, 90, 99, 99.9}

// Dur formats a latency compactly: 850µs, 12.3ms, 1.23s.
func Dur(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	case d < time.Minute:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}

// Describe is the one-line description of the run.
func Describe(r *metrics.Result) string {
	ri := r.Run
	var model string
	switch {
	case ri.Generator != "": // its own schedule, which Generator describes
		model = ri.Model
	case ri.Model == "open" && ri.Stages != "":
		model = "open, stages " + ri.Stages
	case ri.Model == "open":
		model = fmt.Sprintf("open %g/s", ri.Rate)
	case ri.Think != "":
		model = "closed, think " + ri.Think
	default:
		model = "closed"
	}
	plural := func(n int, s string) string {
		if n == 1 {
			return fmt.Sprintf("%d %s", n, s)
		}
		return fmt.Sprintf("%d %ss", n, s)
	}
	dur := ri.Duration
	if ri.Warmup != "" {
		dur += " after " + ri.Warmup + " of warm-up"
	}
	gen := ""
	if ri.Commands == "ws" {
		gen = ", commands on the windows' WebSockets"
	}
	if ri.Generator != "" {
		gen += ", driven by " + ri.Generator
	}
	return fmt.Sprintf("%s, %s, %s, %s × %d windows, %s against %s (shards %s)%s",
		ri.Workload, model, plural(ri.Editors, "editor"), plural(ri.Pages, "page"), ri.WindowsPerPage,
		dur, ri.Server, strings.Join(r.Shards, " "), gen)
}

// Row is one latency metric's line of the summary table.
type Row struct {
	Name  string
	Count int64
	Pcts  []time.Duration // at Percentiles
	Max   time.Duration
}

// Rows computes the summary table.
func Rows(r *metrics.Result) []Row {
	var out []Row
	for _, n := range metrics.Latencies {
		h := r.Hist(n)
		row := Row{Name: n, Count: h.Count(), Max: h.Max()}
		for _, p := range Percentiles {
			row.Pcts = append(row.Pcts, h.Quantile(p))
		}
		out = append(out, row)
	}
	return out
}

// Text writes the end-of-run summary.
func Text(w io.Writer, r *metrics.Result) error {
	c := r.Counts
	var b strings.Builder
	fmt.Fprintf(&b, "kbkit loadgen: %s\n", Describe(r))
	fmt.Fprintf(&b, "load %.1fs: %d operations, %d committed (%.1f/s), %d rejected, %d refused by the window",
		r.Seconds(), c.Commands, c.Committed, r.Rate(), c.Rejections, c.LocalRejections)
	if r.Run.Model == "open" && r.Run.Generator == "" { // k6 counts its own (dropped_iterations)
		fmt.Fprintf(&b, ", %d dropped of %d due", c.Dropped, c.Due)
	}
	b.WriteString("\n")
	if r.PausedSeconds > 0 {
		fmt.Fprintf(&b, "PAUSED: the machine stood still for %.1fs during the load (the wall clock ran that far ahead of the monotonic clock: a virtual machine snapshotted or migrated, a host suspended); the %.1fs above leave it out, but the figures around it are not those of a running machine: run the load again\n",
			r.PausedSeconds, r.Seconds())
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "%-12s %8s", "latency", "count")
	for _, p := range Percentiles {
		fmt.Fprintf(&b, " %9s", fmt.Sprintf("p%g", p))
	}
	fmt.Fprintf(&b, " %9s\n", "max")
	for _, row := range Rows(r) {
		fmt.Fprintf(&b, "%-12s %8d", row.Name, row.Count)
		if row.Count == 0 { // nothing measured (e.g. fan-out across shards): not a latency of 0
			for range row.Pcts {
				fmt.Fprintf(&b, " %9s", "n/a")
			}
			fmt.Fprintf(&b, " %9s\n", "n/a")
			continue
		}
		for _, d := range row.Pcts {
			fmt.Fprintf(&b, " %9s", Dur(d))
		}
		fmt.Fprintf(&b, " %9s\n", Dur(row.Max))
	}
	b.WriteString("\n")
	kinds := func(m map[string]int64) string {
		if s := metrics.Kinds(m); s != "" {
			return s
		}
		return "none"
	}
	fmt.Fprintf(&b, "errors       %s\n", kinds(r.Errors))
	fmt.Fprintf(&b, "rejections   %s\n", kinds(r.Rejections))
	if note := RejectionNote(r); note != "" {
		fmt.Fprintf(&b, "             (%s)\n", note)
	}
	fmt.Fprintf(&b, "retries %d, refetches %d, connects %d, reconnects %d, events applied %d (every window's, echoes and fan-out, of measured commands), peak in flight %s\n",
		c.Retries, c.Refetches, c.Connects, c.Reconnects, c.Echoes, peakInFlight(r))
	if rows := TypeRows(r); len(rows) > 0 {
		// 80 columns at most: p50 and p99 are of the commit latency.
		fmt.Fprintf(&b, "\n%-12s %6s %9s %8s %7s %6s %8s %8s %8s\n", "by type", "ops", "committed", "rejected", "refused", "errors", "p50", "p99", "echo p99")
		na := func(ok bool, d time.Duration) string {
			if !ok {
				return "n/a"
			}
			return Dur(d)
		}
		for _, t := range rows {
			fmt.Fprintf(&b, "%-12s %6d %9d %8d %7d %6d %8s %8s %8s\n", t.Type, t.Commands, t.Committed, t.Rejections, t.Refused, t.Errors,
				na(t.HasCommit, t.CommitP50), na(t.HasCommit, t.CommitP99), na(t.HasEcho, t.EchoP99))
		}
		b.WriteString("(p50, p99: commit latency)\n")
	}
	if r.CPUSeconds > 0 && r.Seconds() > 0 {
		fmt.Fprintf(&b, "cpu          %.1fs over %.1fs of load in the generator's process (%s)",
			r.CPUSeconds, r.Seconds(), map[bool]string{true: "generator and embedded server", false: "generator"}[r.Run.Server == "embedded"])
		if c.Committed > 0 {
			fmt.Fprintf(&b, ", %.3f ms per committed command", 1000*r.CPUSeconds/float64(c.Committed))
		}
		b.WriteString("\n")
	}
	if len(r.EditorsRan) > 0 {
		missing := r.MissingEditors()
		fmt.Fprintf(&b, "editors      %d of %d ran", len(r.EditorsRan), r.Run.Editors)
		if len(missing) > 0 {
			fmt.Fprintf(&b, ", missing %v", missing)
		}
		b.WriteString("\n")
	}
	if len(r.Checks) > 0 {
		b.WriteString("\nthresholds\n")
		for _, ch := range r.Checks {
			mark := "ok  "
			if !ch.Pass {
				mark = "FAIL"
			}
			fmt.Fprintf(&b, "  %s  %s  (actual %s)\n", mark, ch.Expr, ch.Actual)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
