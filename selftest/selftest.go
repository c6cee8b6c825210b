package selftest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/subspace/kbkit/sim"
)

// Control statuses. A negative control must be caught; one that could not
// run is an error, never a pass. A positive control (the unbroken twin a
// verdict is judged against) must pass.
const (
	Caught  = "caught"
	Missed  = "missed"
	Errored = "error"
	Passed  = "passed" // a positive control that passed
)

// Kinds of control.
const (
	KindServer   = "broken server"
	KindClient   = "broken client"
	KindAdapter  = "broken adapter"
	KindZoo      = "zoo"
	KindPositive = "positive control"
)

// The suites a control is run under.
const (
	SuiteSim      = "conformance run"
	SuiteProtocol = "conformance protocol"
	SuiteClient   = "conformance run --client"
	SuiteSpecRun  = "spec run"
	SuiteSpecFuzz = "spec fuzz"
	SuiteGoTest   = "go test ./kbcore/..."
)

// Profile is how hard selftest looks.
type Profile struct {
	Name string `json:"name"`
	// Seeds is the most seeds a broken server or client is run for under
	// the simulator before it counts as missed.
	Seeds int `json:"seeds"`
	// Protocol runs the broken servers under the protocol suite too.
	Protocol bool `json:"protocol"`
	// FuzzSeconds is spec fuzz's time per broken adapter and mutant.
	FuzzSeconds float64 `json:"fuzz_seconds"`
	// MutantsPerArea is how many mutants (that build) each area draws.
	MutantsPerArea int `json:"mutants_per_area"`
	// MutantSeed draws the sample.
	MutantSeed uint64 `json:"mutant_seed"`
	// AllChecks runs every check on every mutant (so that the report says
	// what each check alone kills), not only up to the first kill.
	AllChecks bool `json:"all_checks"`
}

// Profiles: quick for CI, full by hand.
var (
	Quick = Profile{Name: "quick", Seeds: 6, Protocol: false, FuzzSeconds: 3, MutantsPerArea: 1, MutantSeed: 1}
	Full  = Profile{Name: "full", Seeds: 6, Protocol: true, FuzzSeconds: 30, MutantsPerArea: 15, MutantSeed: 1, AllChecks: true}
)

// BrokenServer is a row of the broken-server table (sim/broken, which
// only cmd/ may import: the command line passes the table in).
type BrokenServer struct {
	Name, Breaks string
	// WireOnly: it breaks only what the protocol suite reads before its
	// checks (kb.limits), which the simulator never reads: it runs under
	// the protocol suite alone (protocol/hostile-limits), in every
	// profile.
	WireOnly bool
}

// Servers are the broken servers and how to put a target behind one.
type Servers struct {
	Table []BrokenServer
	// New puts t behind the named broken server; stop ends the proxy.
	New func(t sim.Target, name string) (sim.Target, func(), error)
	// AtRest puts t behind the same proxy with no mutation (the positive
	// control every verdict on a broken server is judged against).
	AtRest func(t sim.Target) (sim.Target, func(), error)
}

// Options configure a selftest run.
type Options struct {
	Profile Profile
	// Root is the module's source tree (mutants build there with an
	// overlay; the example client and the broken adapter are read there).
	Root    string
	Servers Servers
	// Target opens the reference server the broken servers and clients
	// are put in front of (nil: no server controls can run: an error).
	Target func(ctx context.Context) (sim.Target, func(), error)
	// Only, when set, runs only the controls and areas whose name matches.
	Only *regexp.Regexp
	// Mutant, when set, judges only the mutants whose signature matches
	// (in the sample's order, up to the profile's number per area): one
	// survivor can be judged again on its own.
	Mutant *regexp.Regexp
	// Parts selects what runs: "servers", "clients", "adapters",
	// "mutants" (empty: all).
	Parts []string
	// Logf receives progress lines (nil: silent).
	Logf func(format string, args ...any)
}

func (o *Options) logf(format string, args ...any) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}

func (o *Options) part(p string) bool {
	if len(o.Parts) == 0 {
		return true
	}
	for _, q := range o.Parts {
		if q == p {
			return true
		}
	}
	return false
}

func (o *Options) selected(name string) bool { return o.Only == nil || o.Only.MatchString(name) }

// Result is one control under one suite.
type Result struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Breaks string `json:"breaks"`
	Suite  string `json:"suite"`
	Status string `json:"status"`
	// CaughtBy names what failed: checkers, protocol checks, case ids.
	CaughtBy []string `json:"caught_by,omitempty"`
	// Seed is the first seed that caught it, Seeds how many were run
	// (simulator and client suite); Seconds how long the suite ran until
	// it caught it (spec fuzz: until the difference was found).
	Seed    *int64  `json:"seed,omitempty"`
	Seeds   int     `json:"seeds,omitempty"`
	Seconds float64 `json:"seconds"`
	// Fired counts the mutations a broken server's proxy made (0 on a
	// missed control: the runs never exercised the bug).
	Fired int64 `json:"fired,omitempty"`
	// Detail says why, for a missed or errored control (and the first
	// finding of a caught one, cut short).
	Detail string `json:"detail,omitempty"`
	// Reproducer is a command line that shows it again.
	Reproducer string `json:"reproducer,omitempty"`
}

// Report is a selftest run's result.
type Report struct {
	Version string `json:"version"`
	// Command is the command line that ran (with the flags it was given);
	// "" in reports written before it was recorded.
	Command  string         `json:"command,omitempty"`
	Profile  Profile        `json:"profile"`
	Controls []Result       `json:"controls"`
	Zoo      []ZooRecord    `json:"zoo"`
	Mutants  []MutantResult `json:"mutants"`
	Areas    []AreaScore    `json:"areas"`
	Seconds  float64        `json:"seconds"`
	// Errors are what kept a part from running at all.
	Errors []string `json:"errors,omitempty"`
}

// ExitCode: 0 every control caught (and every positive control passed),
// 1 a control was missed, 2 a control or part could not run.
func (r *Report) ExitCode() int {
	code := 0
	if len(r.Errors) > 0 {
		return 2
	}
	for _, c := range r.Controls {
		switch c.Status {
		case Errored:
			return 2
		case Missed:
			code = 1
		}
	}
	for _, m := range r.Mutants {
		if m.Status == MutantError {
			return 2
		}
	}
	return code
}

// Run runs the selftest and returns its report (never nil).
func Run(ctx context.Context, opts Options) *Report {
	start := time.Now()
	rep := &Report{Profile: opts.Profile}
	var mu sync.Mutex
	add := func(rs ...Result) {
		mu.Lock()
		defer mu.Unlock()
		rep.Controls = append(rep.Controls, rs...)
	}
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		rep.Errors = append(rep.Errors, fmt.Sprintf(format, args...))
	}
	if opts.part("servers") || opts.part("clients") {
		runAgainstServer(ctx, &opts, add, fail)
	}
	if opts.part("adapters") {
		add(runBrokenAdapter(ctx, &opts)...)
	}
	if opts.part("mutants") {
		ms, areas, err := runMutants(ctx, &opts)
		if err != nil {
			fail("mutants: %v", err)
		}
		rep.Mutants, rep.Areas = ms, areas
	}
	rep.Zoo = zooRecords(rep.Controls)
	if ctx.Err() != nil {
		fail("interrupted")
	}
	rep.Seconds = time.Since(start).Seconds()
	return rep
}

// runAgainstServer opens the reference server once and runs the broken
// servers and clients in front of it.
func runAgainstServer(ctx context.Context, opts *Options, add func(...Result), fail func(string, ...any)) {
	if opts.Target == nil {
		fail("no reference server to put the broken servers and clients in front of")
		return
	}
	tgt, stop, err := opts.Target(ctx)
	if err != nil {
		fail("the reference server: %v", err)
		return
	}
	defer stop()
	if opts.part("servers") {
		add(runServers(ctx, opts, tgt)...)
	}
	if opts.part("clients") {
		add(runClients(ctx, opts, tgt)...)
	}
}

// FindRoot returns the module's source tree: dir or the nearest parent
// with kbkit's go.mod.
func FindRoot(dir string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module github.com/subspace/kbkit\n") {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", errors.New("not inside kbkit's source tree (no go.mod of github.com/subspace/kbkit above " + dir + "): give --root")
		}
		d = parent
	}
}

func ptr[T any](v T) *T { return &v }

func cut(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return s[:n] + " ..."
	}
	return s
}
