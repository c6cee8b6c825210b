package findmax

import (
	"fmt"
	"strings"
)

// verdict reads the search's outcome: the sustainable rate, the step
// above it that broke the objective, and what ran out there. start and
// maxEditors are the editors the search started with and could grow to.
func verdict(steps []Step, out Outcome, p Plan, start, maxEditors int) Verdict {
	v := Verdict{Sustainable: out.Sustainable, Next: out.Next}
	for _, s := range steps {
		if s.Generator.Limit == LimitGenerator || s.Generator.Limit == LimitShared {
			if v.GeneratorRanOut == 0 || s.Rate < v.GeneratorRanOut {
				v.GeneratorRanOut = s.Rate
			}
		}
	}
	var next *Step // the last step at Next: the one that counted
	for i := len(steps) - 1; i >= 0; i-- {
		if !steps[i].Pass && steps[i].Rate == out.Next {
			next = &steps[i]
			break
		}
	}
	if next == nil {
		switch {
		case p.MaxRate > 0 && out.Sustainable >= p.MaxRate:
			v.Why = fmt.Sprintf("every step met the objective, up to the max rate (%g/s)", p.MaxRate)
		case out.Sustainable > 0:
			v.Why = fmt.Sprintf("every step met the objective: the search ran out of steps (%d) at %g/s", p.MaxSteps, out.Sustainable)
		default:
			v.Why = "no step met the objective, down to the lowest rate tried"
		}
		v.LowerBound = out.Sustainable > 0
		return v
	}
	v.Broken = next.Broken
	raise := "raise --editors or --max-editors"
	switch {
	case next.Editors > 0 && next.Editors < maxEditors:
		raise = fmt.Sprintf("the search ran out of steps (%d) before it ran more: raise --max-steps", p.MaxSteps)
	case maxEditors > start && maxEditors < p.MaxEditors:
		raise = fmt.Sprintf("the workload has no more windows (%d): raise --pages or --windows-per-page", maxEditors)
	case maxEditors > start:
		raise = "raise --max-editors"
	}
	v.LimitedBy, v.Why = limitedBy(*next, raise)
	switch {
	case v.LimitedBy == LimitServer:
	case out.Sustainable > 0:
		v.LowerBound = true
		v.Why += "; the sustainable rate is a lower bound of the server's"
	default:
		v.Why += "; what the server alone sustains is not known"
	}
	return v
}

// OthersShare is the share of the machine's cores other processes must
// have taken, on a machine with every core busy, for a failing step whose
// generator had headroom to be read as the machine running out (the
// server starved by others) rather than the server.
const OthersShare = 0.25

// limitedBy says what ran out at a failing step, generator first: a
// saturated generator is never read as a slow server. raise is what to do
// when the editors ran out.
func limitedBy(s Step, raise string) (string, string) {
	g := s.Generator
	cpu := fmt.Sprintf("%.2f of %g cores", g.Cores, g.Usable)
	wait := "its goroutines' wait for a CPU unknown"
	if g.WaitP99Ms >= 0 {
		wait = fmt.Sprintf("its goroutines waited p99 %s for a CPU", fmtMs(g.WaitP99Ms))
	}
	mach := machineWords(s)
	switch {
	case g.Limit == LimitShared:
		return LimitShared, fmt.Sprintf("the generator and the embedded server, one process, used %s (%s%s): run the server apart (--server) to tell which ran out",
			cpu, wait, mach)
	case g.Limit == LimitGenerator && s.MachineSaturated:
		return LimitMachine, fmt.Sprintf("the machine, not the server alone: %s; the generator used %s and %s", strings.TrimPrefix(mach, "; "), cpu, wait)
	case g.Limit == LimitGenerator:
		return LimitGenerator, fmt.Sprintf("the generator, not the server: it used %s and %s%s", cpu, wait, mach)
	case s.MachineSaturated && s.Machine.Others >= OthersShare*float64(s.Machine.Cores):
		return LimitMachine, fmt.Sprintf("the machine, not the server alone: %s; the generator used %s and %s", strings.TrimPrefix(mach, "; "), cpu, wait)
	case g.Limit == LimitEditors:
		return LimitEditors, fmt.Sprintf("the editors: all %d were busy and %d operations were dropped while the latencies held: %s",
			s.PeakInFlight, s.Dropped, raise)
	}
	srv := ""
	if s.ServerCores != nil {
		srv = fmt.Sprintf("; the server used %.2f cores", *s.ServerCores)
	}
	return LimitServer, fmt.Sprintf("the server: the generator had headroom (%s, %s%s)%s", cpu, wait, mach, srv)
}

// machineWords describes the machine's CPU at a step ("" if unknown).
func machineWords(s Step) string {
	m := s.Machine
	if m == nil {
		return ""
	}
	w := fmt.Sprintf("; the machine's %d cores were %.0f%% busy", m.Cores, 100*m.Busy/float64(m.Cores))
	parts := []string{fmt.Sprintf("generator %.2f", s.Generator.Cores)}
	if s.Generator.WithServer {
		parts[0] = fmt.Sprintf("generator and server %.2f", s.Generator.Cores)
	} else if s.ServerCores != nil {
		parts = append(parts, fmt.Sprintf("server %.2f", *s.ServerCores))
	}
	parts = append(parts, fmt.Sprintf("others %.2f", m.Others))
	if m.Steal >= 0.01 {
		parts = append(parts, fmt.Sprintf("stolen by the hypervisor %.2f", m.Steal))
	}
	return w + " (" + strings.Join(parts, ", ") + ")"
}

func fmtMs(v float64) string {
	switch {
	case v < 0:
		return "n/a"
	case v < 1:
		return fmt.Sprintf("%.0fµs", v*1000)
	case v < 10:
		return fmt.Sprintf("%.2fms", v)
	case v < 1000:
		return fmt.Sprintf("%.1fms", v)
	}
	return fmt.Sprintf("%.2fs", v/1000)
}
