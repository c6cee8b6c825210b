package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/subspace/kbkit/sim"
)

// shrinkFlags are conformance run's flags for shrinking a failing seed and
// replaying a shrunk one.
type shrinkFlags struct {
	shrink, shrinkSet bool
	shrinkBudget      time.Duration
	shrinkRuns        int
	reruns            int
	choicesFile       string
	choices           []int // read from choicesFile
	// choicesDir is --out as given ("": the shrink makes a directory of
	// the run's own in the OS's temporary directory).
	choicesDir string
}

func addShrinkFlags(fl *pflag.FlagSet, f *shrinkFlags) {
	fl.BoolVar(&f.shrink, "shrink", true, "shrink the first failing seed to a small history that fails the same checker (a --choices replay only when given)")
	fl.DurationVar(&f.shrinkBudget, "shrink-budget", 2*time.Minute, "time bound of the shrink's search, after which the shrunk history is replayed --shrink-runs times (0: no shrink)")
	fl.IntVar(&f.shrinkRuns, "shrink-runs", 2, "runs of a shrink candidate: it is taken only if it fails in every one (failures that depend on timing)")
	fl.IntVar(&f.reruns, "reruns", 2, "replays of a failing seed's choices before it is reported: the report says in how many of the runs it failed (0: none)")
	fl.StringVar(&f.choicesFile, "choices", "", "replay the scheduler's choices from FILE (a shrink writes it) instead of drawing them from --seed")
}

// readChoices reads --choices: one seed's history.
func (f *conformanceFlags) readChoices() error {
	if f.choicesFile == "" {
		return nil
	}
	if f.seeds != 1 {
		return errors.New("--choices replays one seed: give --seed S, not --seeds N")
	}
	var err error
	f.choices, err = sim.ReadChoices(f.choicesFile)
	if err != nil {
		return fmt.Errorf("--choices: %w", err)
	}
	return nil
}

// shrinkFirstFailure shrinks the first seed that failed a checker and
// fails one again alone (if shrinking is on), prints the before/after counts and the replay of the
// shrunk history to w, and puts them in the seed's report (Shrunk).
func shrinkFirstFailure(ctx context.Context, w, stderr io.Writer, target sim.Target, fresh func() (sim.Target, func(), error),
	opts sim.Options, f shrinkFlags, reports []sim.SeedReport) {
	on := f.shrink && (f.shrinkSet || opts.Choices == nil)
	if !on || f.shrinkBudget <= 0 {
		return
	}
	// The first failing seed that fails again alone (one that failed only
	// beside the others, e.g. by another seed's restart, cannot be shrunk),
	// within the one budget.
	deadline := time.Now().Add(f.shrinkBudget)
	dir, made := f.choicesDir, false
	defer func() {
		if made {
			os.Remove(dir) // only if no shrink wrote into it
		}
	}()
	for i := range reports {
		if reports[i].Err != "" || !reports[i].Failed() || ctx.Err() != nil {
			continue
		}
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		if dir == "" {
			var err error
			if dir, err = runDir(); err != nil {
				fmt.Fprintf(stderr, "kbkit conformance run: shrink: %v\n", err)
				return
			}
			made = true
		}
		err := shrinkSeed(ctx, w, stderr, target, fresh, opts, f, dir, left, &reports[i])
		if !errors.Is(err, sim.ErrNotReproduced) {
			return
		}
	}
}

// runDir makes the directory of a run's choice files when --out is not
// given: new, in the OS's temporary directory, named by the run's start
// (never the working directory, where another run's files would be).
func runDir() (string, error) {
	dir, err := os.MkdirTemp("", "kbkit-run-"+time.Now().UTC().Format("20060102T150405")+"-")
	if err != nil {
		return "", fmt.Errorf("a directory for the choice files: %w", err)
	}
	return dir, nil
}

// shrinkSeed shrinks one failing seed within budget (shrinkFirstFailure),
// its choice file written into dir under a name no file there has.
func shrinkSeed(ctx context.Context, w, stderr io.Writer, target sim.Target, fresh func() (sim.Target, func(), error),
	opts sim.Options, f shrinkFlags, dir string, budget time.Duration, rep *sim.SeedReport) error {
	var failed []string
	for _, c := range rep.Checks {
		if !c.Passed {
			failed = append(failed, c.Name)
		}
	}
	fmt.Fprintf(stderr, "kbkit conformance run: shrinking seed %d (failed: %s) for at most %s\n",
		rep.Seed, strings.Join(failed, ", "), budget.Round(time.Second))
	res, err := sim.Shrink(ctx, target, opts, *rep, sim.ShrinkOptions{
		Budget: budget, Runs: f.shrinkRuns, ChoicesDir: dir, Fresh: fresh,
		Logf: func(format string, args ...any) { fmt.Fprintf(stderr, "kbkit conformance run: "+format+"\n", args...) },
	})
	if res.NotShrunk != "" {
		rep.Shrunk = res.Summary()
		fmt.Fprintf(w, "\nshrink seed %d: %s %s\n", rep.Seed, res.Checker, res.NotShrunk)
		return err
	}
	if err != nil {
		fmt.Fprintf(stderr, "kbkit conformance run: shrink: %v\n", err)
		return err
	}
	rep.Shrunk = res.Summary() // in the seed's JSON line and JUnit failure
	printShrunk(w, res)
	return nil
}

// printShrunk prints a shrink's outcome: the checker, the before/after
// table and the replay of the shrunk history.
func printShrunk(w io.Writer, res sim.Shrunk) {
	note := ""
	if res.Exhausted {
		note = "; the budget ran out: smaller, not minimal"
	}
	fmt.Fprintf(w, "\nshrunk seed %d: %s failed again in %d of %d replays (%d runs in %s%s)\n",
		res.Seed, res.Checker, res.Failed, res.Replays, res.Runs, res.Took.Round(time.Millisecond), note)
	fmt.Fprintf(w, "  %-7s %6s %8s %6s %8s %7s %9s %8s\n", "", "steps", "windows", "pages", "devices", "faults", "commands", "choices")
	for _, row := range []struct {
		name string
		s    sim.Shape
	}{{"before", res.Before}, {"after", res.After}} {
		fmt.Fprintf(w, "  %-7s %6d %8d %6d %8d %7d %9d %8d\n", row.name, row.s.Steps, row.s.Windows, row.s.Pages,
			row.s.Devices, row.s.Faults, row.s.Commands, row.s.Choices)
	}
	if res.Report.Timeline != "" {
		fmt.Fprintf(w, "  timeline: %s\n", res.Report.Timeline)
	}
	fmt.Fprintf(w, "  replay: %s\n", res.Replay())
}

// shrunkReplay is the JUnit line of a shrunk seed's replay ("" if none).
func shrunkReplay(r sim.SeedReport) string {
	if r.Shrunk == nil {
		return ""
	}
	if r.Shrunk.NotShrunk != "" {
		return fmt.Sprintf("\nshrink (%s): %s", r.Shrunk.Checker, r.Shrunk.NotShrunk)
	}
	return fmt.Sprintf("\nshrunk (%s, %d steps, %d windows): %s", r.Shrunk.Checker, r.Shrunk.After.Steps, r.Shrunk.After.Windows, r.Shrunk.Replay)
}
