package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/subspace/kbkit/internal/cliutil"
	"github.com/subspace/kbkit/internal/version"
	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/sim"
	"github.com/subspace/kbkit/speckit/report"
)

// porcupineDir is where Porcupine's pages go: --out, else beside the
// run's other outputs.
func porcupineDir(f conformanceFlags) string {
	switch {
	case f.outDir != "":
		return f.outDir
	case f.htmlDir != "":
		return f.htmlDir
	case f.junit != "":
		return filepath.Dir(f.junit)
	case f.jsonOut != "" && f.jsonOut != "-":
		return filepath.Dir(f.jsonOut)
	}
	return "."
}

// htmlNote says what --html wrote when it wrote nothing: an empty
// directory without a word looks like a broken flag.
func htmlNote(f conformanceFlags, reports []sim.SeedReport) string {
	if f.htmlDir == "" {
		return ""
	}
	if f.htmlAll || len(reports) == 0 {
		return ""
	}
	for _, r := range reports {
		if r.Timeline != "" || r.Failed() || r.Err != "" {
			return ""
		}
	}
	return fmt.Sprintf("--html %s: every seed passed, so no timeline was written (--html-all writes one of every seed)", f.htmlDir)
}

// summarize prints a table per checker, then every failure with its seed.
func summarize(w io.Writer, reports []sim.SeedReport, took time.Duration) {
	passed, skipped, evidence, reported := map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
	failed := map[string][]int64{}
	var commands, committed, rejected, refetches, gaps int
	for _, r := range reports {
		for _, c := range r.Checks {
			evidence[c.Name] += c.Evidence
			reported[c.Name]++
			switch {
			case c.Passed && c.Skipped: // vacuous: nothing to check is not a pass
				skipped[c.Name]++
			case c.Passed:
				passed[c.Name]++
			default:
				failed[c.Name] = append(failed[c.Name], r.Seed)
			}
		}
		commands += r.Stats.Commands
		committed += r.Stats.Committed
		rejected += r.Stats.Rejected
		refetches += r.Stats.Refetches
		gaps += r.Stats.Gaps
	}
	fmt.Fprintln(w, version.Line())
	// The evidence column: how much each checker had to check, over
	// every seed (a pass with none is a skip).
	fmt.Fprintf(w, "%-16s %6s %7s %6s  %-28s %s\n", "checker", "passed", "skipped", "failed", "evidence", "failing seeds")
	for _, ch := range sim.Checks {
		name := ch.Name
		if reported[name] == 0 && sim.ClientRule(name) {
			continue // a client's rule in a run without clients
		}
		seeds := make([]string, 0, len(failed[name]))
		for _, s := range failed[name] {
			seeds = append(seeds, fmt.Sprint(s))
		}
		ev := fmt.Sprintf("%d %s", evidence[name], ch.Unit)
		fmt.Fprintf(w, "%-16s %6d %7d %6d  %-28s %s\n", name, passed[name], skipped[name], len(failed[name]), ev, strings.Join(seeds, " "))
	}
	fmt.Fprintf(w, "%d seeds in %s: %d commands (%d committed, %d rejected), %d gaps, %d refetches\n",
		len(reports), took.Round(time.Millisecond), commands, committed, rejected, gaps, refetches)
	types := map[string]int{}
	for _, r := range reports {
		for t, n := range r.Types {
			types[t] += n
		}
	}
	var sent []string
	for _, t := range kbcore.Types {
		sent = append(sent, fmt.Sprintf("%s %d", t, types[t]))
	}
	fmt.Fprintf(w, "sent by type: %s\n", strings.Join(sent, ", "))
	for _, r := range reports {
		if r.Err != "" {
			fmt.Fprintf(w, "\nseed %d could not run: %s\n  replay: %s\n", r.Seed, r.Err, r.Replay)
			continue
		}
		if !r.Failed() {
			continue
		}
		if rec := r.Recurrence(); rec != "" {
			fmt.Fprintf(w, "\nseed %d FAILED, %s (faults: %s)\n", r.Seed, rec, r.Faults)
		} else {
			fmt.Fprintf(w, "\nseed %d FAILED (faults: %s)\n", r.Seed, r.Faults)
		}
		for _, c := range r.Checks {
			if !c.Passed {
				fmt.Fprintf(w, "  %s:\n    %s\n", c.Name, strings.ReplaceAll(c.Detail, "\n", "\n    "))
			}
		}
		if r.Visualization != "" {
			fmt.Fprintf(w, "  linearizability visualization: %s\n", r.Visualization)
		}
		if r.Timeline != "" {
			fmt.Fprintf(w, "  timeline: %s\n", r.Timeline)
		}
		h, what := sim.FailureHistory(r, 40)
		fmt.Fprintf(w, "  %s:\n    %s\n", what, strings.Join(h, "\n    "))
		fmt.Fprintf(w, "  replay: %s\n", r.Replay)
	}
}

// writeSeedJSON writes one JSON line per seed to path ("-": stdout), each
// naming the kit and the spec_version (kbkit, spec_version).
func writeSeedJSON(path string, stdout io.Writer, reports []sim.SeedReport) error {
	w, closeFn, err := cliutil.CreateOutput(path, stdout)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	for _, r := range reports {
		rec := struct {
			Kit         string `json:"kbkit"`
			SpecVersion int    `json:"spec_version"`
			sim.SeedReport
		}{version.Kit, version.Spec, r}
		if err := enc.Encode(rec); err != nil {
			closeFn()
			return err
		}
	}
	return closeFn()
}

// writeSeedJUnit writes one suite per checker with one case per seed; a
// failure an entry of baseline allows is <skipped> with its reason.
func writeSeedJUnit(path string, reports []sim.SeedReport, baseline *report.Expectations) error {
	var total time.Duration
	for _, r := range reports {
		total += r.Duration
	}
	doc := report.JUnitDoc{Name: "kbkit conformance run", Time: report.Seconds(total)}
	for _, name := range sim.Checkers {
		s := &report.JUnitSuite{Name: "conformance." + name, Time: report.Seconds(total)}
		allowed, vacuous := 0, 0 // failures an entry allows; seeds with nothing to check
		for _, r := range reports {
			jc := report.JUnitCase{Name: fmt.Sprintf("seed=%d", r.Seed), Classname: "conformance." + name,
				Time: report.Seconds(r.Duration)}
			if r.Err != "" {
				jc.Error = &report.JUnitMsg{Message: "the seed could not run", Body: report.XMLText(r.Err + "\n\nreplay: " + r.Replay)}
				s.Errors++
			}
			reported := false
			for _, c := range r.Checks {
				reported = reported || c.Name == name
				if c.Name == name && c.Passed && c.Skipped && jc.Error == nil {
					// Nothing to check is not a pass.
					jc.Skipped = &report.JUnitMsg{Message: name + " had nothing to check", Body: report.XMLText(c.Detail)}
					s.Skipped++
					vacuous++
				}
				if e := allows(baseline, name); c.Name == name && !c.Passed && e != nil {
					_, msg := baseline.JudgeUnit(e, true)
					jc.Skipped = &report.JUnitMsg{Message: msg, Body: report.XMLText(c.Detail + "\n\nreplay: " + r.Replay)}
					s.Skipped++
					allowed++
				} else if c.Name == name && !c.Passed {
					msg := name + " failed"
					if rec := r.Recurrence(); rec != "" {
						msg += " (" + rec + ")"
					}
					jc.Failure = &report.JUnitMsg{Message: msg,
						Body: report.XMLText(c.Detail + "\n\nreplay: " + r.Replay + shrunkReplay(r) + "\n\nhistory:\n" + strings.Join(r.History, "\n"))}
					s.Failures++
				}
			}
			if !reported && r.Err == "" {
				continue // the checker does not apply to this seed (a client's rule, no client)
			}
			s.Cases = append(s.Cases, jc)
			s.Tests++
		}
		if s.Tests == 0 {
			continue
		}
		if e := allows(baseline, name); e != nil && e.Status == report.ExpectFail && allowed == 0 && s.Failures+s.Errors+vacuous < s.Tests {
			s.Cases = append(s.Cases, report.JUnitCase{Name: "expectation", Classname: "conformance." + name,
				Failure: &report.JUnitMsg{Message: baseline.Stale(*e), Type: string(report.VerdictUnexpectedPass)}})
			s.Tests++
			s.Failures++
		}
		doc.Suites = append(doc.Suites, s)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := report.WriteJUnit(f, doc); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
