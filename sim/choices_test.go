package sim

import (
	"context"
	mrand "math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/subspace/kbkit/internal/longtest"
	"github.com/subspace/kbkit/sim/broken"
)

// The chooser draws what the scheduler drew before it recorded choices
// (so every seed keeps its history), and replays what it recorded; a list
// cut short yields the simplest choices, one out of range is taken modulo.
func TestChooserDrawsAsTheSeed(t *testing.T) {
	type draw struct {
		kind string
		n    int
		p    float64
	}
	var script []draw
	meta := mrand.New(mrand.NewPCG(1, 2))
	for range 500 {
		switch meta.IntN(4) {
		case 0:
			script = append(script, draw{"int", 1 + meta.IntN(100), 0})
		case 1:
			script = append(script, draw{"one", 1 + meta.IntN(12), 0})
		case 2:
			script = append(script, draw{"chance", 0, []float64{0, 0.05, 0.5, 1}[meta.IntN(4)]})
		default:
			script = append(script, draw{"float", 0, 0})
		}
	}
	run := func(c *chooser) []float64 {
		var out []float64
		for _, d := range script {
			switch d.kind {
			case "int":
				out = append(out, float64(c.IntN(d.n)))
			case "one":
				out = append(out, b2f(c.OneIn(d.n)))
			case "chance":
				out = append(out, b2f(c.Chance(d.p)))
			default:
				out = append(out, c.Float64())
			}
		}
		return out
	}
	for _, seed := range []int64{0, 1, 42, -7} {
		// What the scheduler did before: the PRNG called directly.
		rng := mrand.New(mrand.NewPCG(uint64(seed), 0x6b626b6974))
		var want []float64
		for _, d := range script {
			switch d.kind {
			case "int":
				want = append(want, float64(rng.IntN(d.n)))
			case "one":
				want = append(want, b2f(rng.IntN(d.n) == 0))
			case "chance":
				want = append(want, b2f(d.p > 0 && rng.Float64() < d.p))
			default:
				want = append(want, rng.Float64())
			}
		}
		c := newChooser(seed, nil)
		if got := run(c); !slices.Equal(got, want) {
			t.Fatalf("seed %d: the chooser draws otherwise than the PRNG did", seed)
		}
		if got := run(newChooser(seed+1, c.Choices())); !slices.Equal(got, want) {
			t.Fatalf("seed %d: replaying the recorded choices draws otherwise", seed)
		}
		short := newChooser(0, c.Choices()[:10])
		run(short)
		rec := short.Choices()
		if !slices.Equal(rec[:10], c.Choices()[:10]) || slices.ContainsFunc(rec[10:], func(v int) bool { return v != 0 }) {
			t.Fatalf("seed %d: a list cut short does not continue with the simplest choices", seed)
		}
	}
	c := newChooser(0, []int{7, 7, 1 << 40})
	if v := c.IntN(5); v != 2 {
		t.Errorf("choice 7 in [0,5) = %d, want 2", v)
	}
	if !c.OneIn(3) {
		t.Errorf("choice 7 for a one-in-n is the common branch, want the rare one (7 mod 2 = 1)")
	}
	if f := c.Float64(); f < 0 || f >= 1 {
		t.Errorf("choice 2^40 as a float = %v, outside [0,1)", f)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// A seed run replays from its recorded choices (the same faults, the
// same choices made again), and a list cut short or altered still runs a
// valid history: the reference server passes it, whatever it holds.
func TestChoicesReplay(t *testing.T) {
	e := embedded(t, EmbeddedOptions{Instances: 1})
	ctx := context.Background()
	opts := Options{Faults: true, Steps: 40, EchoTimeout: hang}
	const seed = 3
	rep := RunSeed(ctx, e, opts, seed)
	requirePassed(t, "the seed", rep)
	if len(rep.Choices) == 0 || len(rep.StepStarts) != opts.Steps {
		t.Fatalf("the seed recorded %d choices and %d step starts", len(rep.Choices), len(rep.StepStarts))
	}

	again := opts
	again.Choices = rep.Choices
	r := RunSeed(ctx, e, again, seed)
	requirePassed(t, "the replay", r)
	if r.Faults != rep.Faults || !slices.Equal(r.Choices, rep.Choices) || r.Shape != rep.Shape {
		t.Errorf("the replay differs: faults %q / %q, %d / %d choices (equal: %v), shape %+v / %+v",
			r.Faults, rep.Faults, len(r.Choices), len(rep.Choices), slices.Equal(r.Choices, rep.Choices), r.Shape, rep.Shape)
	}

	cut := opts
	cut.Choices = rep.Choices[:len(rep.Choices)/3]
	r = RunSeed(ctx, e, cut, seed)
	requirePassed(t, "the list cut short", r)
	if !slices.Equal(r.Choices[:len(cut.Choices)], cut.Choices) {
		t.Errorf("the run of a list cut short did not make its choices first")
	}

	noise := mrand.New(mrand.NewPCG(9, 9))
	altered := opts
	altered.Choices = slices.Clone(rep.Choices)
	for i := range altered.Choices {
		if noise.IntN(3) == 0 {
			altered.Choices[i] = noise.IntN(1 << 30)
		}
	}
	requirePassed(t, "the altered list", RunSeed(ctx, e, altered, seed))
}

func requirePassed(t *testing.T, what string, r SeedReport) {
	t.Helper()
	if r.Err != "" {
		t.Fatalf("%s could not run: %s\n%s", what, r.Err, tail(r.History, 30))
	}
	for _, c := range r.Checks {
		if !c.Passed {
			t.Errorf("%s: checker %s failed against the reference server:\n%s\n%s", what, c.Name, c.Detail, tail(r.History, 30))
		}
	}
}

// A failing seed against a broken server shrinks to at most 15 steps and
// 2 windows that fail the same checker, and the shrunk history fails it
// again when replayed (scripts/shrink-broken.sh does every variant).
func TestShrinkBroken(t *testing.T) {
	longtest.Mark(t)
	for _, tc := range []struct {
		variant string
		opts    Options
	}{
		{"double-echo", Options{}},
		{"reorder", Options{Faults: true}},
		{"skip-dedup", Options{Faults: true}},
	} {
		t.Run(tc.variant, func(t *testing.T) {
			e := embedded(t, EmbeddedOptions{Instances: 1})
			p, stop, err := broken.New(e, tc.variant)
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			ctx := context.Background()
			opts := tc.opts
			opts.EchoTimeout = time.Second
			var rep SeedReport
			for seed := int64(1); seed <= 4 && !rep.Failed(); seed++ {
				rep = RunSeed(ctx, p, opts, seed)
			}
			if !rep.Failed() {
				t.Fatalf("no seed of 1..4 failed against %s", tc.variant)
			}
			res, err := Shrink(ctx, p, opts, rep, ShrinkOptions{Budget: time.Minute, Runs: 2})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("seed %d, %s: before %+v, after %+v, %d runs in %s; replay: %s", res.Seed, res.Checker, res.Before, res.After,
				res.Runs, res.Took.Round(time.Millisecond), res.Replay())
			if !failedChecker(rep, res.Checker) {
				t.Errorf("shrunk for %s, which the seed did not fail (%v)", res.Checker, failedCheckers(rep))
			}
			if res.After.Steps > 15 || res.After.Windows > 2 {
				t.Errorf("shrunk to %d steps and %d windows, want at most 15 and 2", res.After.Steps, res.After.Windows)
			}
			if res.After.Commands > res.Before.Commands || res.After.Faults > res.Before.Faults {
				t.Errorf("the shrunk history is not smaller: %+v from %+v", res.After, res.Before)
			}
			if res.Failed == 0 {
				t.Errorf("the shrunk history passed all %d replays", res.Replays)
			}
			// A replay from the choices alone, as --choices runs it.
			r := RunSeed(ctx, p, res.Options, res.Seed)
			if !failedChecker(r, res.Checker) {
				t.Errorf("a fresh replay of the shrunk history did not fail %s: %v", res.Checker, failedCheckers(r))
			}
		})
	}
}

// With fewer windows, a step keeps its page: its window choice j becomes
// j mod pages when that window remains (window 3 of 4 on 3 pages edits
// page 0, as window 0 does), and is left to the modulo otherwise.
func TestShrinkKeepsStepsOnTheirPages(t *testing.T) {
	k := &shrinker{
		cur:  Options{Windows: 4, Pages: 3, Choices: []int{1, 7, 3, 9, 2, 5, 0}},
		best: SeedReport{StepStarts: []int{0, 2, 4, 6}},
	}
	c, ok := k.onTheirPages(2)
	if !ok || c.Windows != 2 {
		t.Fatalf("onTheirPages(2) = %d windows, %v; want 2, true", c.Windows, ok)
	}
	// Steps start at 0 (window 1: page 1, stays 1), 2 (window 3: page 0,
	// becomes 0), 4 (window 2: page 2, gone with 2 windows: the modulo
	// decides) and 6 (window 0). Other choices are untouched.
	if want := []int{1, 7, 0, 9, 2, 5, 0}; !slices.Equal(c.Choices, want) {
		t.Errorf("choices %v, want %v", c.Choices, want)
	}
	if !slices.Equal(k.cur.Choices, []int{1, 7, 3, 9, 2, 5, 0}) {
		t.Errorf("the current history changed: %v", k.cur.Choices)
	}
	if _, ok := k.onTheirPages(1); ok {
		t.Error("with 1 window every step is on window 0 already: nothing to remap")
	}
	k.cur.Clients = []string{"node client.mjs"}
	if _, ok := k.onTheirPages(2); ok {
		t.Error("remapped the steps of a run with client adapters")
	}
}
