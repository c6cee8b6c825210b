package selftest

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Mutant statuses.
const (
	MutantKilled     = "killed"
	MutantSurvived   = "survived"
	MutantEquivalent = "equivalent" // survived, and judged equivalent (equivalents.txt)
	MutantError      = "error"      // could not be judged
)

// MutantResult is one mutant's verdict.
type MutantResult struct {
	Mutant
	Status string `json:"status"`
	// KilledBy is the first check, in the order spec run, spec fuzz,
	// go test, that told the mutant from the reference.
	KilledBy string `json:"killed_by,omitempty"`
	// Checks are the verdicts of the checks that ran (true: killed).
	Checks map[string]bool `json:"checks"`
	// Cases are the first spec cases it fails; FuzzSeconds when the
	// fuzzer found its difference (FuzzCase the shrunk case's id).
	Cases       []string `json:"cases,omitempty"`
	FuzzSeconds float64  `json:"fuzz_seconds,omitempty"`
	FuzzCase    string   `json:"fuzz_case,omitempty"`
	Reason      string   `json:"reason,omitempty"` // an equivalent's, from equivalents.txt
	// BeyondModel: killed by go test alone, and judged equivalent under
	// the command model (equivalents.txt): its change shows only through
	// kbcore's Go API (a result field or an option no adapter operation
	// reads, an error's wording), so no suite can see it; the suites'
	// score leaves it out.
	BeyondModel bool   `json:"beyond_model,omitempty"`
	Detail      string `json:"detail,omitempty"`
}

// AreaScore is the mutation score of one area.
type AreaScore struct {
	Area       string `json:"area"`
	Mutants    int    `json:"mutants"` // built and judged
	Equivalent int    `json:"equivalent"`
	Killed     int    `json:"killed"`
	// KilledBy counts the mutants each check alone kills (with
	// AllChecks; else the first check that killed each).
	KilledBy  map[string]int `json:"killed_by"`
	Stillborn int            `json:"stillborn"` // edits that did not build (not counted)
}

// Score is killed / (mutants - equivalent), in percent (-1: nothing to score).
func (a AreaScore) Score() float64 {
	n := a.Mutants - a.Equivalent
	if n <= 0 {
		return -1
	}
	return 100 * float64(a.Killed) / float64(n)
}

// BeyondModelPrefix starts the reason of an equivalent whose change shows
// only through kbcore's Go API: go test may kill it (equivalents.txt).
const BeyondModelPrefix = "beyond the model:"

//go:embed equivalents.txt
var equivalentsFile string

// Equivalents are the reviewed mutant signatures judged equivalent to the
// reference, each with its reason (equivalents.txt: "signature<TAB>reason",
// # comments).
func Equivalents() (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(equivalentsFile))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sig, reason, ok := strings.Cut(line, "\t")
		if !ok || strings.TrimSpace(reason) == "" {
			return nil, fmt.Errorf("equivalents.txt:%d: want a signature, a tab and the reason", n)
		}
		if _, dup := out[sig]; dup {
			return nil, fmt.Errorf("equivalents.txt:%d: %s listed twice", n, sig)
		}
		out[sig] = strings.TrimSpace(reason)
	}
	return out, nil
}

// runMutants draws each area's sample and judges each mutant; the
// reference adapter, unmutated, must pass first.
func runMutants(ctx context.Context, opts *Options) ([]MutantResult, []AreaScore, error) {
	if opts.Profile.MutantsPerArea <= 0 {
		return nil, nil, nil
	}
	equiv, err := Equivalents()
	if err != nil {
		return nil, nil, err
	}
	if _, err := exec.LookPath(goTool()); err != nil {
		return nil, nil, fmt.Errorf("the go tool is needed to build mutants: %v", err)
	}
	work, err := os.MkdirTemp("", "kbkit-selftest-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(work)
	if err := referenceControl(ctx, opts, work); err != nil {
		return nil, nil, err
	}
	var results []MutantResult
	var scores []AreaScore
	for _, area := range Areas {
		if !opts.selected(area.Name) {
			continue
		}
		all, err := Enumerate(opts.Root, area)
		if err != nil {
			return results, scores, err
		}
		score := AreaScore{Area: area.Name, KilledBy: map[string]int{}}
		for _, m := range Sample(all, opts.Profile.MutantSeed) {
			if score.Mutants >= opts.Profile.MutantsPerArea || ctx.Err() != nil {
				break
			}
			if opts.Mutant != nil && !opts.Mutant.MatchString(m.Signature) {
				continue
			}
			r, built := judgeMutant(ctx, opts, work, m, equiv)
			if !built {
				score.Stillborn++
				continue
			}
			opts.logf("selftest: mutant %s:%d %s: %s %s", m.File, m.Line, m.Edit(), r.Status, r.KilledBy)
			score.Mutants++
			switch r.Status {
			case MutantKilled:
				score.Killed++
			case MutantEquivalent:
				score.Equivalent++
			}
			for check, killed := range r.Checks {
				if killed && (opts.Profile.AllChecks || check == r.KilledBy) {
					score.KilledBy[check]++
				}
			}
			results = append(results, r)
		}
		scores = append(scores, score)
	}
	return results, scores, nil
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// refadapter is the package of the reference adapter, built with each
// mutant's overlay.
const refadapter = "./speckit/fuzz/internal/refadapter"

// referenceControl builds the reference adapter unmutated and checks
// that spec run and a short fuzz find nothing (else no kill means
// anything).
func referenceControl(ctx context.Context, opts *Options, work string) error {
	bin := filepath.Join(work, "reference")
	if out, err := goCmd(ctx, opts.Root, "build", "-o", bin, refadapter); err != nil {
		return fmt.Errorf("building the reference adapter: %v\n%s", err, cut(out, 2000))
	}
	c, err := startAdapter(ctx, []string{bin})
	if err != nil {
		return err
	}
	defer c.Close()
	v, err := specRun(ctx, c, nil, false)
	if err != nil {
		return fmt.Errorf("spec run of the reference adapter: %v", err)
	}
	if len(v.Failed) > 0 {
		return fmt.Errorf("the reference adapter fails spec cases %v: no mutant can be judged", v.Failed)
	}
	fv, err := specFuzz(ctx, c, min(opts.Profile.FuzzSeconds, 5), opts.Profile.MutantSeed, nil)
	if err != nil {
		return fmt.Errorf("spec fuzz of the reference adapter: %v", err)
	}
	if fv.Found {
		return fmt.Errorf("the reference adapter differs from the reference (%s): no mutant can be judged", fv.CaseID)
	}
	return nil
}

func goCmd(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, goTool(), args...)
	cmd.Dir = dir
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	return b.String(), err
}

// overlay writes the mutated file and the overlay that puts it in place
// of the original (the tree is never edited).
func overlay(root, work string, m Mutant) (string, error) {
	src, err := os.ReadFile(filepath.Join(root, m.File))
	if err != nil {
		return "", err
	}
	mutated, err := m.Apply(src)
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(work, "mutant-")
	if err != nil {
		return "", err
	}
	file := filepath.Join(dir, filepath.Base(m.File))
	if err := os.WriteFile(file, mutated, 0o644); err != nil {
		return "", err
	}
	ov, _ := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(root, m.File): file}})
	path := filepath.Join(dir, "overlay.json")
	return path, os.WriteFile(path, ov, 0o644)
}

// judgeMutant builds the mutant; built is false when the edit does not
// compile (a stillborn mutant, not counted). Then spec run, spec fuzz and
// go test ./kbcore/... judge it, up to the first kill unless the profile
// runs all checks.
func judgeMutant(ctx context.Context, opts *Options, work string, m Mutant, equiv map[string]string) (r MutantResult, built bool) {
	r = MutantResult{Mutant: m, Checks: map[string]bool{}}
	ov, err := overlay(opts.Root, work, m)
	if err != nil {
		r.Status, r.Detail = MutantError, err.Error()
		return r, true
	}
	bin := filepath.Join(filepath.Dir(ov), "adapter")
	if out, err := goCmd(ctx, opts.Root, "build", "-overlay", ov, "-o", bin, refadapter); err != nil {
		if ctx.Err() != nil {
			r.Status, r.Detail = MutantError, "interrupted"
			return r, true
		}
		return r, false // does not compile (out says why)
	} else {
		_ = out
	}
	kill := func(check string) {
		r.Checks[check] = true
		if r.KilledBy == "" {
			r.KilledBy = check
		}
	}
	done := func() bool { return r.KilledBy != "" && !opts.Profile.AllChecks }

	c, err := startAdapter(ctx, []string{bin})
	if err != nil {
		// An adapter that cannot even start is told apart by spec run.
		kill(SuiteSpecRun)
		r.Detail = cut(err.Error(), 300)
	} else {
		v, err := specRun(ctx, c, nil, true)
		switch {
		case err != nil && ctx.Err() != nil:
			c.Close()
			r.Status, r.Detail = MutantError, "interrupted"
			return r, true
		case err != nil || len(v.Failed) > 0:
			kill(SuiteSpecRun)
			r.Cases = v.Failed[:min(len(v.Failed), 3)]
		default:
			r.Checks[SuiteSpecRun] = false
		}
		if !done() {
			start := time.Now()
			fv, err := specFuzz(ctx, c, opts.Profile.FuzzSeconds, opts.Profile.MutantSeed, nil)
			switch {
			case err != nil && ctx.Err() != nil:
				c.Close()
				r.Status, r.Detail = MutantError, "interrupted"
				return r, true
			case err != nil:
				kill(SuiteSpecFuzz) // the adapter broke under fuzzing
				r.FuzzSeconds, r.Detail = time.Since(start).Seconds(), cut(err.Error(), 300)
			case fv.Found:
				kill(SuiteSpecFuzz)
				r.FuzzSeconds, r.FuzzCase = fv.After.Seconds(), fv.CaseID
			default:
				r.Checks[SuiteSpecFuzz] = false
			}
		}
		c.Close()
	}
	if !done() {
		out, err := goCmd(ctx, opts.Root, "test", "-overlay", ov, "-count=1", "-timeout", "300s", "./kbcore/...")
		switch {
		case ctx.Err() != nil:
			r.Status, r.Detail = MutantError, "interrupted"
			return r, true
		case err != nil:
			kill(SuiteGoTest)
			if r.Detail == "" {
				r.Detail = firstFailure(out)
			}
		default:
			r.Checks[SuiteGoTest] = false
		}
	}
	reason, listed := equiv[m.Signature]
	switch {
	case r.KilledBy != "":
		r.Status = MutantKilled
		switch {
		case listed && r.KilledBy == SuiteGoTest && strings.HasPrefix(reason, BeyondModelPrefix):
			r.BeyondModel, r.Reason = true, reason
		case listed:
			r.Detail = "listed as equivalent but " + r.KilledBy + " killed it: remove it from equivalents.txt"
		}
	case listed:
		r.Status, r.Reason = MutantEquivalent, reason
	default:
		r.Status = MutantSurvived
	}
	return r, true
}

// firstFailure is the first failing test's line of go test's output.
func firstFailure(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "--- FAIL") || strings.HasPrefix(l, "panic:") {
			return strings.TrimSpace(l)
		}
	}
	return cut(out, 200)
}
