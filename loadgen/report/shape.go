package report

import (
	"fmt"

	"github.com/subspace/kbkit/loadgen/metrics"
)

// ShapeDiff lists how two runs differ in what they asked of the server
// (workload, model, schedule, editors, pages, windows, duration, target,
// generator): figures of runs that differ so are not a before and after.
func ShapeDiff(a, b *metrics.Result) []string {
	ra, rb := a.Run, b.Run
	var out []string
	diff := func(what string, x, y any) {
		if fmt.Sprint(x) != fmt.Sprint(y) {
			out = append(out, fmt.Sprintf("%s %v vs %v", what, show(x), show(y)))
		}
	}
	diff("workload", ra.Workload, rb.Workload)
	diff("model", ra.Model, rb.Model)
	diff("rate", ra.Rate, rb.Rate)
	diff("stages", ra.Stages, rb.Stages)
	diff("editors", ra.Editors, rb.Editors)
	diff("pages", ra.Pages, rb.Pages)
	diff("windows per page", ra.WindowsPerPage, rb.WindowsPerPage)
	diff("think", ra.Think, rb.Think)
	diff("duration", ra.Duration, rb.Duration)
	diff("target", ra.Server, rb.Server)
	diff("generator", ra.Generator, rb.Generator)
	return out
}

func show(v any) any {
	if s, ok := v.(string); ok && s == "" {
		return "(none)"
	}
	return v
}

// RejectionNote explains rejections that a run on shared pages makes by
// design, or is empty: they are the reducer's decisions on edits that
// raced (spec/README.md's rejection codes), not failures of the server.
func RejectionNote(r *metrics.Result) string {
	n := r.Rejections["node-not-found"] + r.Rejections["parent-not-found"] + r.Rejections["anchor-not-sibling"]
	if n == 0 || r.Run.WindowsPerPage < 2 {
		return ""
	}
	return fmt.Sprintf("expected with %d windows per page: an editor's command names a node another editor deleted or moved just before it, and the server decides it rejected; decisions, not errors", r.Run.WindowsPerPage)
}
