package fuzz

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/subspace/kbkit/target"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/speckit/adapter"
	"github.com/subspace/kbkit/speckit/cases"
	"github.com/subspace/kbkit/speckit/report"
)

// Options configure Run.
type Options struct {
	// Impl is the implementation under test, typically an *adapter.Client.
	Impl cases.Impl
	// Suites are the suites to draw inputs for, in turn (those the
	// implementation lists, narrowed by the caller).
	Suites []string
	// Commands are the command types to draw (an adapter's init_ok
	// `commands`); nil means every type of the spec.
	Commands []string
	// Seed makes the run replayable: the same seed, suites, commands and
	// count draw the same inputs.
	Seed uint64
	// Count stops the run after this many inputs, Duration after this
	// long (whichever comes first; at least one must be set).
	Count    int
	Duration time.Duration
	// Expect silences known differences: a fuzzed case whose id matches an
	// entry with status skip is not sent; one whose id matches an entry
	// with status fail or known_flaky, or each of whose signatures does
	// (signature.go), may differ (it is counted in Report.Hits, not
	// reported).
	Expect *report.Expectations
	// ShrinkTime and ShrinkTests bound the shrinking of each difference
	// (defaults 30s and 5,000 trials).
	ShrinkTime  time.Duration
	ShrinkTests int
	// MaxDifferences, if positive, ends the run once that many
	// differences were found and shrunk.
	MaxDifferences int
	// OnDifference, if set, is called with each difference once shrunk.
	OnDifference func(*Difference)
}

// Difference is one way the implementation differs from the reference.
type Difference struct {
	// Case is the shrunk case, its expected side the reference's reply; it
	// loads in the case runner (CaseYAML prints it).
	Case cases.Case
	// Outcome is the case runner's verdict on the implementation: Fail
	// with the diff ("-" reference, "+" implementation) or Error.
	Outcome cases.Outcome
	// Area is the spec file the case belongs to (a command type,
	// tokenizer/text, window, ...), and Kind what differs (the parts of
	// the reply, the rejection codes): one difference is shrunk per area
	// and kind, and shrinking keeps both.
	Area, Kind string
	// Input is the number (from 1) of the input that first showed it, and
	// FoundAfter the time into the run when it did.
	Input      int
	FoundAfter time.Duration
	// Original and Shrunk are the sizes before and after shrinking.
	Original, Shrunk Size
	ShrinkTests      int
	ShrinkTime       time.Duration
	// Repeats counts later inputs that differed in the same area and kind.
	Repeats int
	// Signatures name the difference by area, command type or step kind
	// and field (signature.go); New are those no expectation covers, the
	// entries to add to expect it.
	Signatures, New []string
}

// Size measures an input: its choices and its JSON (given, when, steps).
type Size struct {
	Choices int `json:"choices"`
	Bytes   int `json:"bytes"`
}

// SuiteStats counts one suite's inputs by what became of them.
type SuiteStats struct {
	Inputs   int `json:"inputs"`   // drawn
	Same     int `json:"same"`     // the implementation agreed with the reference
	Differ   int `json:"differ"`   // it did not (reported or repeats)
	Silenced int `json:"silenced"` // it did not, as an expectation (status fail) says
	Skipped  int `json:"skipped"`  // not supported (error 10, unlisted command) or an expected skip
	Invalid  int `json:"invalid"`  // the reference could not take the input as a case: dropped
}

// Report is the result of a run.
type Report struct {
	Seed        uint64
	Inputs      int
	Elapsed     time.Duration
	Suites      map[string]*SuiteStats
	Differences []*Difference
	// Hits counts, per entry of Options.Expect, the inputs whose
	// difference it silenced (JudgeExpectations reads it).
	Hits map[*report.Expectation]int
}

// Run fuzzes o.Impl until o.Count inputs or o.Duration have passed.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Impl == nil {
		return nil, fmt.Errorf("%w: no implementation", target.ErrCannotRun)
	}
	if len(o.Suites) == 0 {
		return nil, fmt.Errorf("%w: no suite to fuzz", target.ErrCannotRun)
	}
	if o.Count <= 0 && o.Duration <= 0 {
		return nil, fmt.Errorf("%w: neither a count nor a duration", target.ErrCannotRun)
	}
	for _, s := range o.Suites {
		if !isSuite(s) {
			return nil, fmt.Errorf("%w: unknown suite %q", target.ErrCannotRun, s)
		}
	}
	if o.ShrinkTime <= 0 {
		o.ShrinkTime = 30 * time.Second
	}
	if o.ShrinkTests <= 0 {
		o.ShrinkTests = 5000
	}
	if miss := missingGenerators(); len(miss) > 0 {
		return nil, fmt.Errorf("%w: no payload generator for command type %s (speckit/fuzz/gen_cmd.go)", target.ErrCannotRun, strings.Join(miss, ", "))
	}
	f := &fuzzer{o: o, impl: &recorder{Impl: o.Impl}, areas: map[string]*Difference{}, guide: newGuide()}
	f.types = kbcore.Types
	if o.Commands != nil {
		f.types = nil
		for _, t := range kbcore.Types {
			for _, c := range o.Commands {
				if c == t {
					f.types = append(f.types, t)
				}
			}
		}
		needs := slices.Contains(o.Suites, cases.SuiteCommands) || slices.Contains(o.Suites, cases.SuitePlanner)
		if len(f.types) == 0 && needs {
			return nil, fmt.Errorf("%w: the implementation applies none of the spec's command types", target.ErrCannotRun)
		}
	}
	return f.run(ctx)
}

func isSuite(s string) bool {
	for _, k := range cases.Suites {
		if k == s {
			return true
		}
	}
	return false
}

type fuzzer struct {
	o     Options
	impl  *recorder
	ref   cases.Reference
	types []string
	areas map[string]*Difference // by area and kind
	guide *guide
	rep   Report
}

// verdict is what became of one input.
type verdict int

const (
	same verdict = iota
	differ
	silenced
	skipped
	invalid
)

// probed is one drawn, checked input.
type probed struct {
	verdict verdict
	c       cases.Case
	out     cases.Outcome
	area    string
	kind    string
	sigs    []string              // a difference's signatures
	by      []*report.Expectation // the entries that silenced it
}

// key groups differences: one is shrunk per area, kind and signatures.
func (p probed) key() string { return p.area + " " + p.kind + " " + strings.Join(p.sigs, " ") }

func (f *fuzzer) run(ctx context.Context) (*Report, error) {
	start := time.Now()
	f.rep = Report{Seed: f.o.Seed, Suites: map[string]*SuiteStats{}, Hits: map[*report.Expectation]int{}}
	for _, s := range f.o.Suites {
		f.rep.Suites[s] = &SuiteStats{}
	}
	for i := 0; ; i++ {
		if f.o.Count > 0 && i >= f.o.Count || f.o.Duration > 0 && time.Since(start) >= f.o.Duration {
			break
		}
		if err := ctx.Err(); err != nil {
			return &f.rep, err
		}
		suite := f.o.Suites[i%len(f.o.Suites)]
		rng := rand.New(rand.NewPCG(f.o.Seed, uint64(i)))
		src := f.guide.source(suite, rng)
		p, err := f.probe(ctx, suite, src)
		if err != nil {
			f.rep.Elapsed = time.Since(start)
			return &f.rep, err
		}
		if p.verdict != invalid {
			f.guide.observe(suite, p.c, src.out, rng)
		}
		f.rep.Inputs = i + 1
		st := f.rep.Suites[suite]
		st.Inputs++
		switch p.verdict {
		case same:
			st.Same++
		case silenced:
			st.Silenced++
			for _, e := range p.by {
				f.rep.Hits[e]++
			}
		case skipped:
			st.Skipped++
		case invalid:
			st.Invalid++
		case differ:
			st.Differ++
			if d := f.areas[p.key()]; d != nil {
				d.Repeats++
				continue
			}
			d, err := f.shrink(ctx, suite, p, src, i+1, time.Since(start))
			if err != nil {
				f.rep.Elapsed = time.Since(start)
				return &f.rep, err
			}
			f.areas[p.key()] = d
			f.rep.Differences = append(f.rep.Differences, d)
			if f.o.OnDifference != nil {
				f.o.OnDifference(d)
			}
			if f.o.MaxDifferences > 0 && len(f.rep.Differences) >= f.o.MaxDifferences {
				f.rep.Elapsed = time.Since(start)
				return &f.rep, nil
			}
		}
	}
	f.rep.Elapsed = time.Since(start)
	return &f.rep, nil
}

// generate draws one input of suite.
func (f *fuzzer) generate(suite string, s *Source) (cases.Case, error) {
	switch suite {
	case cases.SuiteCommands:
		return genCommandCase(s, f.types), nil
	case cases.SuiteTokenizer:
		return genTokenizerCase(s), nil
	case cases.SuiteWindow:
		return genWindowCase(s)
	case cases.SuiteCanonical:
		return genCanonicalCase(s), nil
	default:
		return genPlannerCase(s, f.types), nil
	}
}

// probe draws an input from s, has the reference fill in its expected
// side and checks the implementation against it. An error means the run
// cannot go on (the adapter gave up, the context ended).
func (f *fuzzer) probe(ctx context.Context, suite string, s *Source) (probed, error) {
	c, err := f.generate(suite, s)
	if err != nil {
		return probed{verdict: invalid}, nil
	}
	full, err := Expected(ctx, f.ref, c)
	if err != nil {
		return probed{verdict: invalid}, nil
	}
	p := probed{c: full, area: area(full.ID)}
	e := f.o.Expect.Match(full.ID)
	if e != nil && e.Status == report.ExpectSkip {
		p.verdict = skipped
		return p, nil
	}
	f.impl.last = nil
	p.out = cases.Check(ctx, f.impl, full)
	if err := f.impl.last; err != nil {
		if errors.Is(err, adapter.ErrGaveUp) {
			return p, fmt.Errorf("%w: %v", target.ErrCannotRun, err)
		}
		if ctx.Err() != nil {
			return p, ctx.Err()
		}
	}
	switch {
	case p.out.Status == cases.Pass:
		p.verdict = same
	case p.out.Status == cases.Skip:
		p.verdict = skipped
	default:
		p.sigs = Signatures(full, p.out)
		if p.by = f.silencedBy(e, p.sigs); p.by != nil {
			p.verdict = silenced
			return p, nil
		}
		p.verdict = differ
		p.kind = kindOf(p.out)
	}
	return p, nil
}

// silencedBy are the entries that expect a difference: e, the entry the
// input's id matched (status fail or known_flaky), or else one entry per
// signature, each matching it with status fail or known_flaky; nil when
// some signature is not expected.
func (f *fuzzer) silencedBy(e *report.Expectation, sigs []string) []*report.Expectation {
	if e != nil {
		return []*report.Expectation{e}
	}
	var by []*report.Expectation
	for _, s := range sigs {
		m := f.o.Expect.Match(s)
		if m == nil || m.Status == report.ExpectSkip {
			return nil
		}
		by = append(by, m)
	}
	return by
}

// uncovered are the signatures no entry expects (status fail or
// known_flaky).
func (f *fuzzer) uncovered(sigs []string) []string {
	var out []string
	for _, s := range sigs {
		if m := f.o.Expect.Match(s); m == nil || m.Status == report.ExpectSkip {
			out = append(out, s)
		}
	}
	return out
}

// kindOf names what differs in an outcome: the parts of the reply its
// diff has a section for ("doc", "index", "actions", "effects", ...; a
// window step's number left out) and the rejection lines, or "error".
func kindOf(o cases.Outcome) string {
	if o.Status == cases.Error {
		return "error"
	}
	seen := map[string]bool{}
	var parts []string
	for _, l := range strings.Split(o.Diff, "\n") {
		var k string
		switch {
		case strings.HasPrefix(l, "- rejected:"), strings.HasPrefix(l, "+ rejected:"),
			strings.HasPrefix(l, "- accepted"), strings.HasPrefix(l, "+ accepted"):
			k, _, _ = strings.Cut(l, " (") // the code, without the free-text message
		case strings.HasSuffix(l, ":") && l != "" && l[0] != ' ' && l[0] != '-' && l[0] != '+':
			k = l
			if strings.HasPrefix(k, "step ") {
				_, k, _ = strings.Cut(k[len("step "):], " ")
			}
		case strings.HasSuffix(l, "not touched by the plan"):
			k = "untouched page"
		default:
			continue
		}
		if !seen[k] {
			seen[k] = true
			parts = append(parts, k)
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// area is a case id without its hash: the spec file and, for the
// tokenizer and planner, the kind of input.
func area(id string) string {
	a, rest, _ := strings.Cut(id, "/fuzz-")
	if i := strings.LastIndexByte(rest, '-'); i >= 0 {
		return a + "/" + rest[:i]
	}
	return a
}

// shrink reduces the difference p (drawn from src) to a minimal input
// that still differs in the same area with the same status.
func (f *fuzzer) shrink(ctx context.Context, suite string, p probed, src *Source, input int, at time.Duration) (*Difference, error) {
	start := time.Now()
	var fatal error
	best := p
	test := func(c Choices) (Choices, []span, bool) {
		if fatal != nil || ctx.Err() != nil {
			return c, nil, false
		}
		s := newReplaySource(c)
		q, err := f.probe(ctx, suite, s)
		if err != nil {
			fatal = err
			return s.out, s.spans, false
		}
		ok := q.verdict == differ && q.key() == p.key()
		if ok {
			best = q
		}
		return s.out, s.spans, ok
	}
	choices, tests := shrink(test, src.out, src.spans, f.o.ShrinkTime, f.o.ShrinkTests)
	if fatal != nil {
		return nil, fatal
	}
	best.c.Description = fmt.Sprintf("found by kbkit spec fuzz (seed %d, input %d, shrunk); the expected side is the reference's reply", f.o.Seed, input)
	return &Difference{
		Case: best.c, Outcome: best.out, Area: p.area, Kind: p.kind, Input: input, FoundAfter: at,
		Signatures: p.sigs, New: f.uncovered(p.sigs),
		Original:    Size{Choices: len(src.out), Bytes: inputSize(p.c)},
		Shrunk:      Size{Choices: len(choices), Bytes: inputSize(best.c)},
		ShrinkTests: tests, ShrinkTime: time.Since(start),
	}, nil
}

// recorder passes calls through and keeps the last error, so that the
// fuzzer can tell an adapter that gave up from one that differs.
type recorder struct {
	cases.Impl
	last error
}

func (r *recorder) note(err error) error {
	if err != nil {
		r.last = err
	}
	return err
}

func (r *recorder) Apply(ctx context.Context, doc, cmd json.RawMessage) (cases.ApplyReply, error) {
	out, err := r.Impl.Apply(ctx, doc, cmd)
	return out, r.note(err)
}

func (r *recorder) Tokenize(ctx context.Context, req cases.TokenizeRequest) (cases.TokenizeReply, error) {
	out, err := r.Impl.Tokenize(ctx, req)
	return out, r.note(err)
}

func (r *recorder) Window(ctx context.Context, req cases.WindowRequest) ([]cases.WindowState, error) {
	out, err := r.Impl.Window(ctx, req)
	return out, r.note(err)
}

func (r *recorder) Canonical(ctx context.Context, req cases.CanonicalRequest) (string, error) {
	cz, ok := r.Impl.(cases.Canonicalizer)
	if !ok {
		return "", fmt.Errorf("%w: canonical suite", cases.ErrNotSupported)
	}
	out, err := cz.Canonical(ctx, req)
	return out, r.note(err)
}

func (r *recorder) Plan(ctx context.Context, req cases.PlanRequest) (cases.PlanReply, error) {
	pl, ok := r.Impl.(cases.Planner)
	if !ok {
		return cases.PlanReply{}, fmt.Errorf("%w: planner suite", cases.ErrNotSupported)
	}
	out, err := pl.Plan(ctx, req)
	return out, r.note(err)
}
