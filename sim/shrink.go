package sim

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"
)

// ShrinkOptions bound a Shrink.
type ShrinkOptions struct {
	// Budget bounds the search (default 2m): what is found by then is the
	// result, replayed Runs times after it (each within SeedTimeout).
	Budget time.Duration
	// Runs is how often a candidate is run (default 2): it is taken only
	// if it fails the checker in every run, so that a shrink of a failure
	// that depends on timing ends on a history that fails each time, not
	// on one that failed once. The shrunk history is replayed as often at
	// the end.
	Runs int
	// ChoicesFile is where the shrunk history's choices are written, a
	// file that must not exist (WriteChoices); ChoicesDir, if ChoicesFile
	// is "", a directory they are written into under a name no other file
	// there has (WriteChoicesIn; both "": nowhere). The replay command
	// names the file.
	ChoicesFile, ChoicesDir string
	// Fresh, if set, gives each run a target of its own (and the func
	// that stops it), as a replay gets: a broken server whose breakage
	// depends on what it saw before (no-answer counts calls) must not
	// carry one candidate's state into the next. nil: every run drives
	// the target Shrink was given.
	Fresh func() (Target, func(), error)
	// Logf receives a line per accepted candidate (nil = silent).
	Logf func(format string, args ...any)
}

// ErrNotReproduced: the seed to shrink failed no checker again when
// replayed alone (or its reruns, Rerun, failed none), so there is no
// failure to hold fixed; Shrunk.NotShrunk says so.
var ErrNotReproduced = errors.New("conformance: the failure did not recur")

// Shrunk is the outcome of a Shrink.
type Shrunk struct {
	Seed    int64
	Checker string // the checker every accepted candidate failed (see ShrinkChecker)
	Before  Shape
	After   Shape
	// Options replay the shrunk history (Choices set; ChoicesFile when
	// ShrinkOptions had one): ReplayCommand(Options, Seed) is its line.
	Options Options
	// Report is the last replay of the shrunk history (a failing one, if
	// any failed): its Timeline is the shrunk seed's page.
	Report SeedReport
	// Replays and Failed count the final replays and how many of them
	// failed Checker again.
	Replays, Failed int
	Runs            int // seed runs the shrink made, replays included
	Took            time.Duration
	// Exhausted: the budget ended the shrink before no candidate was
	// left to try; the result is smaller than the seed, not minimal.
	Exhausted bool
	// NotShrunk is why the seed was not shrunk (with ErrNotReproduced):
	// its failure does not recur under replay.
	NotShrunk string
}

// Replay is the command line that replays the shrunk history.
func (s Shrunk) Replay() string { return ReplayCommand(s.Options, s.Seed) }

// Summary is the shrink as a seed's report states it.
func (s Shrunk) Summary() *ShrinkSummary {
	if s.NotShrunk != "" {
		return &ShrinkSummary{Checker: s.Checker, NotShrunk: s.NotShrunk}
	}
	return &ShrinkSummary{Checker: s.Checker, Before: s.Before, After: s.After, Failed: s.Failed, Replays: s.Replays,
		Replay: s.Replay(), Timeline: s.Report.Timeline}
}

// ShrinkChecker is the checker a shrink of rep prefers to hold fixed: its
// first failing checker other than protocol (a broken guarantee more
// specific than a stall), else protocol; "" if none failed. Shrink takes
// it among the checkers that fail again when the seed is replayed alone.
func ShrinkChecker(rep SeedReport) string {
	first := ""
	for _, c := range rep.Checks {
		if c.Passed {
			continue
		}
		if c.Name != CheckProtocol {
			return c.Name
		}
		if first == "" {
			first = c.Name
		}
	}
	return first
}

// Shrink reduces the history of rep, a failing seed run under opts
// against target, to a smaller one that still fails the same checker
// (one rep failed that fails again when the seed is replayed alone,
// ShrinkChecker's preference): fewer windows, scheduler steps (the last
// ones, then blocks of steps with their choices), pages and devices, no
// faults, then single choices set to their simplest, as Hypothesis
// shrinks its choice sequence, so every candidate is a history the
// scheduler could draw. A candidate is taken when it fails the checker in
// every one of its ShrinkOptions.Runs runs and it is simpler (see
// simpler); candidates run one at a time against the same target (or a
// fresh one each, ShrinkOptions.Fresh). A seed whose failure does not
// recur is ErrNotReproduced at once, its budget unspent: one whose reruns
// (rep.Runs, Rerun) all passed, or that fails nothing again when replayed
// alone once.
func Shrink(ctx context.Context, target Target, opts Options, rep SeedReport, so ShrinkOptions) (Shrunk, error) {
	opts.defaults()
	if so.Budget <= 0 {
		so.Budget = 2 * time.Minute
	}
	if so.Runs <= 0 {
		so.Runs = 2
	}
	if so.Logf == nil {
		so.Logf = func(string, ...any) {}
	}
	checker := ShrinkChecker(rep)
	if checker == "" {
		return Shrunk{}, fmt.Errorf("seed %d did not fail: nothing to shrink", rep.Seed)
	}
	start := time.Now()
	cur := opts
	cur.Seeds, cur.Parallel, cur.Trace, cur.Progress = 1, 1, false, nil
	cur.HTMLDir, cur.HTMLAll, cur.OutDir, cur.ChoicesFile = "", false, "", ""
	cur.Logf = func(string, ...any) {}
	cur.Choices = rep.Choices
	if n := rep.Shape.Steps; n > 0 && n < cur.Steps {
		cur.Steps = n // the seed stopped drawing steps early (an echo timeout)
	}
	bctx, cancel := context.WithDeadline(ctx, start.Add(so.Budget))
	defer cancel()
	run := func(ctx context.Context, o Options) SeedReport {
		if so.Fresh == nil {
			return RunSeed(ctx, target, o, rep.Seed)
		}
		t, stop, err := so.Fresh()
		if err != nil {
			return SeedReport{Seed: rep.Seed, Err: err.Error()}
		}
		defer stop()
		return RunSeed(ctx, t, o, rep.Seed)
	}
	// Hold fixed a checker the seed fails again when replayed alone: one
	// that failed only by timing (beside other seeds) would not recur, and
	// a search for a smaller history that fails would spend the budget on
	// chance.
	if rep.Runs > 1 && rep.FailedRuns <= 1 {
		why := fmt.Sprintf("does not recur under replay (%s); not shrunk", rep.Recurrence())
		return Shrunk{Seed: rep.Seed, Checker: checker, NotShrunk: why, Took: time.Since(start)},
			fmt.Errorf("%w: seed %d %s", ErrNotReproduced, rep.Seed, why)
	}
	replays := 1
	if checker = ShrinkChecker(bothFailed(rep, run(bctx, cur))); checker == "" {
		why := "does not recur under replay (it passed a replay alone); not shrunk"
		return Shrunk{Seed: rep.Seed, Checker: ShrinkChecker(rep), NotShrunk: why, Runs: replays, Took: time.Since(start)},
			fmt.Errorf("%w: seed %d %s", ErrNotReproduced, rep.Seed, why)
	}
	// Two searches from the seed, windows first (half the budget) and
	// steps first: neither order finds the smaller history for every
	// server (no-answer needs its commands, so fewer windows need more
	// steps; renumber fails in one step with four windows, in forty with
	// one). The result with fewer windows (fewer actors to follow; the
	// simpler one when they have as many) then gets its single choices
	// shrunk too.
	half, cancelHalf := context.WithDeadline(bctx, start.Add(so.Budget/2))
	defer cancelHalf()
	k1 := &shrinker{ctx: half, run: run, seed: rep.Seed, checker: checker, runs: so.Runs, cur: cur, best: rep, logf: so.Logf, windowsFirst: true}
	for k1.round(false) {
	}
	k := &shrinker{ctx: bctx, run: run, seed: rep.Seed, checker: checker, runs: so.Runs, cur: cur, best: rep, logf: so.Logf}
	for k.round(false) {
	}
	k.n += k1.n + replays
	if w1, w := k1.best.Shape.Windows, k.best.Shape.Windows; w1 < w || (w1 == w && simpler(k1.best, k.best)) {
		k.cur, k.best, k.windowsFirst = k1.cur, k1.best, true
	}
	for k.round(true) {
	}
	out := Shrunk{Seed: rep.Seed, Checker: checker, Before: rep.Shape, Options: k.cur, Runs: k.n, Exhausted: bctx.Err() != nil}
	switch {
	case so.ChoicesFile != "":
		if err := WriteChoices(so.ChoicesFile, k.cur, rep.Seed, k.cur.Choices); err != nil {
			return out, fmt.Errorf("write the shrunk choices: %w", err)
		}
		out.Options.ChoicesFile = so.ChoicesFile
	case so.ChoicesDir != "":
		path, err := WriteChoicesIn(so.ChoicesDir, fmt.Sprintf("seed-%d", rep.Seed), k.cur, rep.Seed, k.cur.Choices)
		if err != nil {
			return out, fmt.Errorf("write the shrunk choices: %w", err)
		}
		if abs, err := filepath.Abs(path); err == nil {
			path = abs // the replay line runs from any directory
		}
		out.Options.ChoicesFile = path
	}
	// The replays run under the caller's context: the budget may be spent.
	final := out.Options
	final.HTMLDir, final.OutDir, final.Logf = opts.HTMLDir, opts.OutDir, opts.Logf
	out.Report = k.best
	for range so.Runs {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		r := run(ctx, final)
		out.Runs++
		out.Replays++
		if r.Err == "" && failedChecker(r, checker) {
			out.Failed++
			out.Report = r
		} else if out.Failed == 0 {
			out.Report = r
		}
	}
	out.After = out.Report.Shape
	out.Took = time.Since(start)
	return out, nil
}

// bothFailed is a with only the checks that failed in b too.
func bothFailed(a, b SeedReport) SeedReport {
	var checks []CheckResult
	for _, c := range a.Checks {
		if !c.Passed && failedChecker(b, c.Name) {
			checks = append(checks, c)
		}
	}
	a.Checks = checks
	return a
}

func failedChecker(r SeedReport, name string) bool {
	for _, c := range r.Checks {
		if c.Name == name && !c.Passed {
			return true
		}
	}
	return false
}

// shrinker holds the smallest failing history found so far.
type shrinker struct {
	ctx     context.Context
	run     func(context.Context, Options) SeedReport // one run of the seed
	seed    int64
	checker string
	runs    int
	cur     Options    // the smallest failing history: its options and choices
	best    SeedReport // a failing run of cur
	n       int        // seed runs made
	logf    func(format string, args ...any)
	// windowsFirst: shrink the windows before the steps.
	windowsFirst bool
}

// try runs candidate c k.runs times; if every run fails the checker and
// the first is simpler than the current history, c (with the choices its
// first run made) becomes the current history. The first run that does
// not fail ends the try: a candidate that fails only sometimes is not
// taken.
func (k *shrinker) try(c Options, what string) bool {
	var first SeedReport
	for i := range k.runs {
		if k.ctx.Err() != nil {
			return false
		}
		r := k.run(k.ctx, c)
		k.n++
		if r.Err != "" || !failedChecker(r, k.checker) {
			return false // passed, or could not run (or the budget ended it): not a failure
		}
		if i == 0 {
			if !simpler(r, k.best) {
				return false // fails, but is no smaller (e.g. a simpler choice made a command)
			}
			first = r
		}
	}
	c.Choices = first.Choices
	k.cur, k.best = c, first
	k.logf("shrink seed %d: %s: %s still fails, %d of %d runs (%d steps, %d windows, %d commands, %d choices)",
		k.seed, what, k.checker, k.runs, k.runs, first.Shape.Steps, first.Shape.Windows, first.Shape.Commands, first.Shape.Choices)
	return true
}

// simpler orders histories as the shrink reduces them: by steps, windows,
// pages, devices, faults, commands and choices, in that order, then by the
// sum of the choices (Hypothesis' shortlex order, roughly).
func simpler(a, b SeedReport) bool {
	x, y := a.Shape, b.Shape
	if c := slices.Compare([]int{x.Steps, x.Windows, x.Pages, x.Devices, x.Faults, x.Commands, x.Choices},
		[]int{y.Steps, y.Windows, y.Pages, y.Devices, y.Faults, y.Commands, y.Choices}); c != 0 {
		return c < 0
	}
	sum := func(cs []int) (n int) {
		for _, c := range cs {
			n += c
		}
		return n
	}
	return sum(a.Choices) < sum(b.Choices)
}

// round runs the structural passes once and, with choices, if none made
// progress, the pass over single choices (the costliest); it reports
// whether a pass made progress (and the budget is not spent).
func (k *shrinker) round(choices bool) bool {
	progress := false
	// Steps before pages: fewer pages may need more steps (no-answer
	// counts calls, and setup makes four a page).
	passes := []func() bool{k.steps, k.windows, k.dropSteps, k.pages, k.devices, k.noFaults}
	if k.windowsFirst {
		passes[0], passes[1] = k.windows, k.steps
	}
	for _, pass := range passes {
		if pass() {
			progress = true
		}
		if k.ctx.Err() != nil {
			return false
		}
	}
	if !progress && choices {
		progress = k.zeroChoices()
	}
	return progress && k.ctx.Err() == nil
}

// steps finds the fewest scheduler steps that still fail (a binary
// search: the choices of fewer steps are a prefix of the same list).
func (k *shrinker) steps() bool {
	lo, hi, progress := 1, k.cur.Steps, false
	for lo < hi && k.ctx.Err() == nil {
		mid := (lo + hi) / 2
		c := k.cur
		c.Steps = mid
		if k.try(c, fmt.Sprintf("%d steps", mid)) {
			hi, progress = mid, true
		} else {
			lo = mid + 1
		}
	}
	return progress
}

// shape tries each smaller value of one dimension, smallest first.
func (k *shrinker) shape(name string, get func(*Options) *int) bool {
	for v := 1; v < *get(&k.cur); v++ {
		c := k.cur
		*get(&c) = v
		if k.try(c, fmt.Sprintf("%d %s", v, name)) {
			return true
		}
	}
	return false
}

// windows tries fewer windows, each count also with every step kept on
// its page and on one page: window i edits page i mod pages, so two
// windows race on a page only when they share it.
func (k *shrinker) windows() bool {
	for v := 1; v < k.cur.Windows; v++ {
		c := k.cur
		c.Windows = v
		if k.try(c, fmt.Sprintf("%d windows", v)) {
			return true
		}
		if r, ok := k.onTheirPages(v); ok && k.try(r, fmt.Sprintf("%d windows, each step on its page", v)) {
			return true
		}
		if v > 1 && c.Pages > 1 {
			c.Pages = 1
			if k.try(c, fmt.Sprintf("%d windows on 1 page", v)) {
				return true
			}
		}
	}
	return false
}

// onTheirPages is the current history with v windows where each step
// keeps the page it acted on: a step's first choice picks its window (sim
// step), and with fewer windows that choice, taken modulo v, would move
// the step to another page (window 3 of 4 on 3 pages edits page 0; of 2
// windows, choice 3 is window 1, on page 1). Window j becomes window j mod
// pages when that one remains. Not with client adapters, whose steps pick
// among windows and clients.
func (k *shrinker) onTheirPages(v int) (Options, bool) {
	c := k.cur
	c.Windows = v
	if len(c.Clients) > 0 || c.Pages < 1 {
		return c, false
	}
	c.Choices = slices.Clone(k.cur.Choices)
	changed := false
	for _, at := range k.best.StepStarts {
		if at >= len(c.Choices) {
			break
		}
		j := c.Choices[at]
		if p := j % c.Pages; p < v && p != j%v {
			c.Choices[at] = p
			changed = true
		}
	}
	return c, changed
}

func (k *shrinker) pages() bool { return k.shape("pages", func(o *Options) *int { return &o.Pages }) }

func (k *shrinker) devices() bool {
	return k.shape("devices", func(o *Options) *int { return &o.Devices })
}

func (k *shrinker) noFaults() bool {
	if !k.cur.Faults {
		return false
	}
	c := k.cur
	c.Faults = false
	return k.try(c, "no faults")
}

// dropSteps removes scheduler steps with their choices: blocks of half
// the steps, a quarter, ... down to single steps, each block tried from
// the last steps to the first (as Hypothesis deletes blocks of choices).
func (k *shrinker) dropSteps() bool {
	progress := false
	for size := len(k.best.StepStarts) / 2; size >= 1; size /= 2 {
		for i := len(k.best.StepStarts) - size; i >= 0 && k.ctx.Err() == nil; i -= size {
			starts := k.best.StepStarts
			if i+size > len(starts) || k.cur.Steps-size < 1 {
				continue
			}
			end := len(k.cur.Choices)
			if i+size < len(starts) {
				end = starts[i+size]
			}
			if starts[i] > end || end > len(k.cur.Choices) {
				continue
			}
			c := k.cur
			c.Steps -= size
			c.Choices = slices.Concat(k.cur.Choices[:starts[i]], k.cur.Choices[end:])
			what := fmt.Sprintf("without step %d", i)
			if size > 1 {
				what = fmt.Sprintf("without steps %d-%d", i, i+size-1)
			}
			if k.try(c, what) {
				progress = true
			}
		}
	}
	return progress
}

// zeroChoices sets single choices to their simplest value (no fault, the
// first window, the commonest branch): the fault draws before the first
// step first, then the rest from the last.
func (k *shrinker) zeroChoices() bool {
	first := len(k.cur.Choices)
	if len(k.best.StepStarts) > 0 {
		first = k.best.StepStarts[0]
	}
	var order []int
	for i := 0; i < first; i++ {
		order = append(order, i)
	}
	for i := len(k.cur.Choices) - 1; i >= first; i-- {
		order = append(order, i)
	}
	progress := false
	for _, i := range order {
		if k.ctx.Err() != nil {
			break
		}
		if i >= len(k.cur.Choices) || k.cur.Choices[i] == 0 {
			continue
		}
		c := k.cur
		c.Choices = slices.Clone(k.cur.Choices)
		c.Choices[i] = 0
		if k.try(c, fmt.Sprintf("choice %d simplest", i)) {
			progress = true
		}
	}
	return progress
}
