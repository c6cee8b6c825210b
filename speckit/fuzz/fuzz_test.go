package fuzz

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/subspace/kbkit/target"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/speckit/cases"
)

// TestPrintedCasesLoadAndPass holds CaseYAML to the case runner: every
// input the generators draw, printed with the reference's reply as its
// expected side, parses as a case file and passes against the reference.
// (So a shrunk difference pasted into spec/ is a case the reference
// passes and the implementation fails.)
func TestPrintedCasesLoadAndPass(t *testing.T) {
	ctx := context.Background()
	f := &fuzzer{types: kbcore.Types}
	n := 300
	if testing.Short() {
		n = 60
	}
	valid := map[string]int{}
	for _, suite := range cases.Suites {
		for i := range n {
			src := newRandomSource(rand.New(rand.NewPCG(7, uint64(i))))
			c, err := f.generate(suite, src)
			if err != nil {
				continue
			}
			full, err := Expected(ctx, cases.Reference{}, c)
			if err != nil {
				continue
			}
			valid[suite]++
			text := CaseFile(full)
			parse := cases.Parse
			if suite == cases.SuiteCanonical {
				parse = cases.ParseCanonical
			}
			file, err := parse("fuzz.yaml", []byte(text))
			if err != nil {
				t.Fatalf("%s input %d: the printed case does not parse: %v\n%s", suite, i, err, text)
			}
			got := file.Cases[0]
			if got.ID != full.ID || got.Suite() != suite {
				t.Fatalf("%s input %d: read back as %s (%s)", suite, i, got.ID, got.Suite())
			}
			if out := cases.Check(ctx, cases.Reference{}, got); out.Status != cases.Pass {
				t.Fatalf("%s input %d: the printed case %s against the reference: %s\n%s", suite, i, out.Status, out.Diff, text)
			}
		}
	}
	for _, suite := range cases.Suites {
		// Most drawn inputs must be usable, or the fuzzer fuzzes nothing.
		if valid[suite] < n*3/4 {
			t.Errorf("%s: only %d of %d drawn inputs are valid cases", suite, valid[suite], n)
		}
	}
	t.Logf("valid inputs of %d per suite: %v", n, valid)
}

// TestReferenceAgreesWithItself: the in-process reference, fuzzed, has no
// difference (the expected side and the check are one computation seen
// twice; a difference would be a fuzzer bug).
func TestReferenceAgreesWithItself(t *testing.T) {
	rep, err := Run(context.Background(), Options{Impl: cases.Reference{}, Suites: cases.Suites, Seed: 1, Count: 400})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range rep.Differences {
		t.Errorf("%s: %s\n%s", d.Case.ID, d.Outcome.Diff, CaseYAML(d.Case))
	}
	for s, st := range rep.Suites {
		t.Logf("%s: %+v", s, *st)
	}
}

// TestRunRefusesWhatItCannotRun: no implementation, suite, bound or
// command type is an error, never an empty green run.
func TestRunRefusesWhatItCannotRun(t *testing.T) {
	ctx := context.Background()
	for name, o := range map[string]Options{
		"no impl":       {Suites: []string{"tokenizer"}, Count: 1},
		"no suite":      {Impl: cases.Reference{}, Count: 1},
		"unknown suite": {Impl: cases.Reference{}, Suites: []string{"nope"}, Count: 1},
		"no bound":      {Impl: cases.Reference{}, Suites: []string{"tokenizer"}},
		"no command":    {Impl: cases.Reference{}, Suites: []string{"commands"}, Commands: []string{"frobnicate"}, Count: 1},
	} {
		if _, err := Run(ctx, o); !errors.Is(err, target.ErrCannotRun) {
			t.Errorf("%s: %v, want target.ErrCannotRun", name, err)
		}
	}
	// A tokenizer-only implementation that applies no command still runs.
	rep, err := Run(ctx, Options{Impl: cases.Reference{}, Suites: []string{"tokenizer"}, Commands: []string{}, Count: 10})
	if err != nil || rep.Inputs != 10 {
		t.Errorf("tokenizer only: %v, %d inputs", err, rep.Inputs)
	}
}
