package selftest

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/subspace/kbkit/speckit/adapter"
	"github.com/subspace/kbkit/speckit/cases"
	"github.com/subspace/kbkit/speckit/fuzz"
	"github.com/subspace/kbkit/speckit/report"
)

// specVerdict is what spec run made of an implementation: the cases it
// failed (or erred on), of how many that ran.
type specVerdict struct {
	Failed []string
	Ran    int
}

// specRun checks every case of the spec against impl, as `kbkit spec run`
// does (expect: the implementation's expectations file, or nil), up to
// the first failing case with firstOnly.
func specRun(ctx context.Context, impl cases.Impl, expect *report.Expectations, firstOnly bool) (specVerdict, error) {
	all, err := cases.Open()
	if err != nil {
		return specVerdict{}, err
	}
	var v specVerdict
	for _, c := range all {
		e := expect.Match(c.ID)
		if e != nil && e.Status == report.ExpectSkip {
			continue
		}
		r := report.Judge(cases.Check(ctx, impl, c), e)
		if r.Status == cases.Skip {
			continue
		}
		v.Ran++
		if !r.Verdict.OK() {
			v.Failed = append(v.Failed, c.ID)
			if firstOnly {
				return v, nil
			}
		}
		if ctx.Err() != nil {
			return v, ctx.Err()
		}
	}
	if v.Ran == 0 {
		return v, fmt.Errorf("no case ran")
	}
	return v, nil
}

// fuzzVerdict is what spec fuzz made of an implementation.
type fuzzVerdict struct {
	Found  bool
	After  time.Duration // when the difference was found
	Inputs int
	CaseID string // the shrunk difference's case id
	Area   string
}

// specFuzz fuzzes impl against the reference for the given time, as
// `kbkit spec fuzz --seconds N --seed S` does, up to the first difference.
func specFuzz(ctx context.Context, c *adapter.Client, seconds float64, seed uint64, expect *report.Expectations) (fuzzVerdict, error) {
	info := c.Info()
	var suites []string
	for _, s := range cases.Suites {
		if info.Supports(s) {
			suites = append(suites, s)
		}
	}
	if len(suites) == 0 {
		return fuzzVerdict{}, fmt.Errorf("the adapter lists no suite to fuzz")
	}
	rep, err := fuzz.Run(ctx, fuzz.Options{Impl: c, Suites: suites, Commands: info.Commands, Seed: seed,
		Duration: time.Duration(seconds * float64(time.Second)), Expect: expect, MaxDifferences: 1,
		ShrinkTime: 10 * time.Second, ShrinkTests: 500})
	if err != nil {
		return fuzzVerdict{}, err
	}
	v := fuzzVerdict{Inputs: rep.Inputs}
	if len(rep.Differences) > 0 {
		d := rep.Differences[0]
		v.Found, v.After, v.CaseID, v.Area = true, d.FoundAfter, d.Case.ID, d.Area
	}
	return v, nil
}

func startAdapter(ctx context.Context, argv []string) (*adapter.Client, error) {
	return adapter.Start(ctx, argv, adapter.Options{Timeout: 10 * time.Second, Stderr: io.Discard, MaxFailures: 20})
}

// runBrokenAdapter runs the broken example adapter
// (speckit/adapters/broken) under spec run and spec fuzz, with the
// example Node adapter's expectations (it is that adapter with one bug).
func runBrokenAdapter(ctx context.Context, opts *Options) []Result {
	const name = "speckit/adapters/broken"
	if !opts.selected(name) {
		return nil
	}
	base := Result{Kind: KindAdapter, Name: name, Breaks: "edit-text stores the text without its last character when it is longer than three"}
	errored := func(suite string, err error) []Result {
		r := base
		r.Suite, r.Status, r.Detail = suite, Errored, err.Error()
		return []Result{r}
	}
	if _, err := exec.LookPath("node"); err != nil {
		return errored(SuiteSpecRun, fmt.Errorf("node is not installed: the broken adapter cannot run"))
	}
	expect, err := report.LoadExpectations(filepath.Join(opts.Root, "speckit", "adapters", "node", "expectations.yaml"))
	if err != nil {
		return errored(SuiteSpecRun, err)
	}
	argv := []string{"node", filepath.Join(opts.Root, "speckit", "adapters", "broken", "adapter.mjs")}
	var out []Result

	run := base
	run.Suite = SuiteSpecRun
	start := time.Now()
	c, err := startAdapter(ctx, argv)
	if err != nil {
		return errored(SuiteSpecRun, err)
	}
	v, err := specRun(ctx, c, expect, false)
	c.Close()
	run.Seconds = time.Since(start).Seconds()
	switch {
	case err != nil:
		run.Status, run.Detail = Errored, err.Error()
	case len(v.Failed) > 0:
		run.Status, run.CaughtBy = Caught, v.Failed[:min(len(v.Failed), 5)]
		run.Detail = fmt.Sprintf("%d of %d cases fail", len(v.Failed), v.Ran)
		run.Reproducer = "kbkit spec run --impl \"node speckit/adapters/broken/adapter.mjs\" --expect speckit/adapters/node/expectations.yaml"
	default:
		run.Status, run.Detail = Missed, fmt.Sprintf("all %d cases pass", v.Ran)
	}
	out = append(out, run)
	opts.logf("selftest: %s under %s: %s", name, SuiteSpecRun, run.Status)

	fz := base
	fz.Suite = SuiteSpecFuzz
	c, err = startAdapter(ctx, argv)
	if err != nil {
		return append(out, errored(SuiteSpecFuzz, err)...)
	}
	fv, err := specFuzz(ctx, c, opts.Profile.FuzzSeconds, 1, expect)
	c.Close()
	switch {
	case err != nil:
		fz.Status, fz.Detail = Errored, err.Error()
	case fv.Found:
		fz.Status, fz.CaughtBy, fz.Seconds = Caught, []string{fv.Area}, fv.After.Seconds()
		fz.Detail = fmt.Sprintf("a difference in %s after %d inputs", fv.Area, fv.Inputs)
		fz.Reproducer = fmt.Sprintf("kbkit spec fuzz --impl \"node speckit/adapters/broken/adapter.mjs\" --expect speckit/adapters/node/expectations.yaml --seed 1 --seconds %g", opts.Profile.FuzzSeconds)
	default:
		fz.Status, fz.Seconds = Missed, opts.Profile.FuzzSeconds
		fz.Detail = fmt.Sprintf("no difference in %d inputs", fv.Inputs)
	}
	opts.logf("selftest: %s under %s: %s", name, SuiteSpecFuzz, fz.Status)
	return append(out, fz)
}
