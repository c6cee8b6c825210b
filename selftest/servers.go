package selftest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/subspace/kbkit/sim"
	"github.com/subspace/kbkit/wiresuite"
)

// serverOptions are the simulator's options per broken server: what its
// bug needs to show (lost responses for a retry, long runs for renames of
// linked pages). A server not named here runs with faults and 200 steps.
var serverOptions = map[string]sim.Options{
	"double-echo":            {},
	"reorder":                {},
	"ignore-last-event-id":   {},
	"untracked-events":       {},
	"event-id-not-seq":       {},
	"skip-dedup":             {Faults: true},
	"no-duplicate-flag":      {Faults: true},
	"non-canonical-page":     {Faults: true},
	"drop-derived":           {Steps: 200},
	"lose-cells":             {Steps: 200},
	"drop-rejected-outcomes": {Faults: true, Steps: 150},
	"no-own-echo":            {SeedTimeout: 20 * time.Second},
	"renumber":               {SeedTimeout: 20 * time.Second},
	"ack-seq":                {SeedTimeout: 20 * time.Second},
	"no-answer":              {EchoTimeout: 2 * time.Second, SeedTimeout: 8 * time.Second},
	"refuse-sockets":         {Windows: 2, SeedTimeout: time.Minute, Steps: 1000},
}

func simOptions(name string) sim.Options {
	o, ok := serverOptions[name]
	if !ok {
		if z, ok := zooEntry(name); ok && z.Options != nil {
			o = *z.Options
		} else {
			o = sim.Options{Faults: true, Steps: 200}
		}
	}
	if o.EchoTimeout == 0 {
		o.EchoTimeout = time.Second // broken servers make windows wait for echoes that never come
	}
	if o.SeedTimeout == 0 {
		o.SeedTimeout = time.Minute
	}
	o.Parallel = 1
	return o
}

// simFlags are the command-line flags of opts (for a reproducer).
func simFlags(o sim.Options) string {
	var f []string
	if o.Faults {
		f = append(f, "--faults")
	}
	if o.Steps != 0 {
		f = append(f, fmt.Sprintf("--steps %d", o.Steps))
	}
	if o.Windows != 0 {
		f = append(f, fmt.Sprintf("--windows %d", o.Windows))
	}
	if o.Pages != 0 {
		f = append(f, fmt.Sprintf("--pages %d", o.Pages))
	}
	if o.EchoTimeout != 0 {
		f = append(f, "--echo-timeout "+o.EchoTimeout.String())
	}
	if o.SeedTimeout != 0 {
		f = append(f, "--seed-timeout "+o.SeedTimeout.String())
	}
	return strings.Join(f, " ")
}

// runServers runs the positive control, then every broken server (two at
// a time), under the simulator and, with the profile's Protocol, under
// the protocol suite.
func runServers(ctx context.Context, opts *Options, tgt sim.Target) []Result {
	if opts.Servers.New == nil || opts.Servers.AtRest == nil || len(opts.Servers.Table) == 0 {
		return []Result{{Kind: KindServer, Name: "(table)", Suite: SuiteSim, Status: Errored,
			Detail: "no broken servers in this build"}}
	}
	out, unusable := runAtRest(ctx, opts, tgt)
	for _, r := range out {
		if r.Status != Passed {
			opts.logf("selftest: the positive control failed; the broken servers cannot be judged")
			return out
		}
	}
	var rows []BrokenServer
	for _, b := range opts.Servers.Table {
		if opts.selected(b.Name) {
			rows = append(rows, b)
		}
	}
	results := make([][]Result, len(rows))
	var wg sync.WaitGroup
	slots := make(chan struct{}, 2)
	for i, b := range rows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			kind := KindServer
			if _, ok := zooEntry(b.Name); ok {
				kind = KindZoo
			}
			if !b.WireOnly {
				r := simControl(ctx, opts, tgt, kind, b)
				opts.logf("selftest: %s %s under %s: %s %v", kind, b.Name, SuiteSim, r.Status, r.CaughtBy)
				results[i] = append(results[i], r)
			}
			if opts.Profile.Protocol || b.WireOnly {
				p := protocolControl(ctx, opts, tgt, kind, b, unusable)
				opts.logf("selftest: %s %s under %s: %s %v", kind, b.Name, SuiteProtocol, p.Status, p.CaughtBy)
				results[i] = append(results[i], p)
			}
		}()
	}
	wg.Wait()
	for _, rs := range results {
		out = append(out, rs...)
	}
	return append(out, missingZoo(opts, KindServer, out)...)
}

// runAtRest runs the proxy without a mutation under the simulator (the
// options of every broken server, one seed each) and the protocol suite:
// every checker must pass, or no verdict on a broken server means
// anything. The protocol checks the proxy itself fails (it relays
// WebSockets as a client would, not byte for byte) are unusable: they
// judge no broken server, and the control's detail names them.
func runAtRest(ctx context.Context, opts *Options, tgt sim.Target) (out []Result, unusable map[string]bool) {
	start := time.Now()
	r := Result{Kind: KindPositive, Name: "at-rest", Breaks: "the proxy of the broken servers, changing nothing", Suite: SuiteSim, Status: Passed}
	seen := map[string]bool{}
	for _, b := range opts.Servers.Table {
		o := simOptions(b.Name)
		if b.Name == "refuse-sockets" || b.Name == "no-answer" {
			continue // options that only make sense against their bug (a long run, a short seed)
		}
		key := fmt.Sprintf("%+v", o)
		if seen[key] {
			continue
		}
		seen[key] = true
		p, stop, err := opts.Servers.AtRest(tgt)
		if err != nil {
			r.Status, r.Detail = Errored, err.Error()
			break
		}
		rep := sim.RunSeed(ctx, p, o, 1)
		stop()
		r.Seeds++
		if rep.Err != "" {
			r.Status, r.Detail = Errored, "seed 1 could not run: "+rep.Err
			break
		}
		if f := failed(rep); len(f) > 0 {
			r.Status, r.CaughtBy, r.Detail = Errored, f, "the proxy at rest fails "+strings.Join(f, ", ")+" ("+simFlags(o)+")"
			break
		}
	}
	r.Seconds = time.Since(start).Seconds()
	out = []Result{r}
	opts.logf("selftest: at-rest under %s: %s", SuiteSim, r.Status)
	unusable = map[string]bool{}
	if opts.Profile.Protocol {
		p := protocolRun(ctx, opts, tgt, nil, nil)
		p.Kind, p.Name, p.Breaks = KindPositive, "at-rest", r.Breaks
		switch p.Status {
		case Caught:
			if slices.Contains(p.CaughtBy, "preflight") || len(p.CaughtBy) > len(protocolChecks())/4 {
				p.Status, p.Detail = Errored, "the proxy at rest fails "+strings.Join(p.CaughtBy, ", ")
				break
			}
			for _, id := range p.CaughtBy {
				unusable[id] = true
			}
			p.Status, p.Detail = Passed, fmt.Sprintf("passes %d checks; not used (the proxy at rest fails them): %s",
				len(protocolChecks())-len(p.CaughtBy), strings.Join(p.CaughtBy, ", "))
			p.CaughtBy = nil
		case Missed:
			p.Status = Passed
		}
		opts.logf("selftest: at-rest under %s: %s %s", SuiteProtocol, p.Status, p.Detail)
		out = append(out, p)
	}
	return out, unusable
}

func failed(r sim.SeedReport) []string {
	var out []string
	for _, c := range r.Checks {
		if !c.Passed {
			out = append(out, c.Name)
		}
	}
	return out
}

func firstFinding(r sim.SeedReport) string {
	for _, c := range r.Checks {
		if !c.Passed {
			return c.Name + ": " + cut(c.Detail, 300)
		}
	}
	return ""
}

// simControl runs seeds 1, 2, ... of the broken server's options, each
// behind a fresh proxy, until a checker fails or the profile's seeds are
// spent.
func simControl(ctx context.Context, opts *Options, tgt sim.Target, kind string, b BrokenServer) (r Result) {
	o := simOptions(b.Name)
	r = Result{Kind: kind, Name: b.Name, Breaks: b.Breaks, Suite: SuiteSim, Status: Missed}
	start := time.Now()
	defer func() { r.Seconds = time.Since(start).Seconds() }()
	for seed := int64(1); seed <= int64(opts.Profile.Seeds); seed++ {
		p, stop, err := opts.Servers.New(tgt, b.Name)
		if err != nil {
			r.Status, r.Detail = Errored, err.Error()
			return r
		}
		rep := sim.RunSeed(ctx, p, o, seed)
		if f, ok := p.(interface{ Fired() int64 }); ok {
			r.Fired += f.Fired()
		}
		stop()
		r.Seeds++
		if rep.Err != "" {
			r.Status, r.Detail = Errored, fmt.Sprintf("seed %d could not run: %s", seed, rep.Err)
			return r
		}
		if f := failed(rep); len(f) > 0 {
			r.Status, r.CaughtBy, r.Seed, r.Detail = Caught, f, ptr(seed), firstFinding(rep)
			r.Reproducer = strings.Join(slices.DeleteFunc([]string{"kbkit conformance run --broken-server", b.Name,
				simFlags(o), fmt.Sprintf("--seed %d --seeds 1", seed)}, func(s string) bool { return s == "" }), " ")
			return r
		}
	}
	r.Detail = fmt.Sprintf("no checker failed in %d seeds (%s); the bug fired %d times", r.Seeds, simFlags(o), r.Fired)
	return r
}

// protocolControl runs the protocol suite against the broken server.
func protocolControl(ctx context.Context, opts *Options, tgt sim.Target, kind string, b BrokenServer, unusable map[string]bool) Result {
	r := protocolRun(ctx, opts, tgt, &b, unusable)
	r.Kind, r.Name, r.Breaks = kind, b.Name, b.Breaks
	if r.Status == Caught {
		r.Reproducer = "kbkit conformance protocol --run '" + strings.Join(r.CaughtBy, "|") + "' (against a server broken as " + b.Name + ")"
	}
	return r
}

// limitsCheck is the protocol check about kb.limits' fields.
const limitsCheck = "protocol/hostile-limits"

// protocolChecks are the protocol checks selftest runs: all but the
// hostile ones, which hold connections up to the server's timeouts and
// spend its allowances (the broken servers change none of that).
func protocolChecks() []wiresuite.Check {
	var out []wiresuite.Check
	for _, c := range wiresuite.Checks() {
		if !strings.Contains(c.ID, "hostile") {
			out = append(out, c)
		}
	}
	return out
}

// protocolRun runs the protocol suite but the unusable checks against
// tgt behind b's proxy (nil: the proxy at rest): Caught when a check
// failed, Missed when none did.
func protocolRun(ctx context.Context, opts *Options, tgt sim.Target, b *BrokenServer, unusable map[string]bool) (r Result) {
	r = Result{Suite: SuiteProtocol}
	start := time.Now()
	defer func() { r.Seconds = time.Since(start).Seconds() }()
	var p sim.Target
	var stop func()
	var err error
	if b == nil {
		p, stop, err = opts.Servers.AtRest(tgt)
	} else {
		p, stop, err = opts.Servers.New(tgt, b.Name)
	}
	if err != nil {
		r.Status, r.Detail = Errored, err.Error()
		return r
	}
	defer stop()
	env, err := protocolEnv(ctx, p, tgt)
	if err != nil {
		r.Status, r.Detail = Errored, err.Error()
		return r
	}
	if err := env.Preflight(ctx); err != nil {
		// A server broken so that the suite cannot even start is caught
		// by the preflight (exit status 2 of conformance protocol).
		r.Status, r.CaughtBy, r.Detail = Caught, []string{"preflight"}, err.Error()
		return r
	}
	checks := slices.DeleteFunc(protocolChecks(), func(c wiresuite.Check) bool { return unusable[c.ID] })
	if b != nil && b.WireOnly {
		// What it breaks is read by the suite's preflight and judged
		// by the check about the limits alone.
		checks = slices.DeleteFunc(wiresuite.Checks(), func(c wiresuite.Check) bool { return c.ID != limitsCheck })
	}
	// A broken server stops the suite at its first failing check (a
	// server that stops answering would hold every later check up to its
	// timeout); the proxy at rest runs every check.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := wiresuite.Run(sctx, env, checks, wiresuite.Options{Timeout: 60 * time.Second,
		OnResult: func(_, _ int, res wiresuite.Result) {
			if b != nil && res.Status == wiresuite.Fail {
				cancel()
			}
		}})
	if ctx.Err() != nil {
		r.Status, r.Detail = Errored, "interrupted"
		return r
	}
	for _, res := range results {
		if res.Status == wiresuite.Fail && (len(r.CaughtBy) == 0 || sctx.Err() == nil) {
			r.CaughtBy = append(r.CaughtBy, res.ID)
			if r.Detail == "" {
				r.Detail = res.ID + ": " + cut(res.Message, 300)
			}
		}
	}
	r.Status = Missed
	if len(r.CaughtBy) > 0 {
		r.Status = Caught
	} else {
		r.Detail = fmt.Sprintf("no failed check of %d", len(results))
	}
	return r
}

// protocolEnv is the suite's view of p: two devices of one workspace
// through p, the other tokens (another workspace, one to revoke, a fresh
// one) from the reference server.
func protocolEnv(ctx context.Context, p, base sim.Target) (*wiresuite.Env, error) {
	tok, err := p.Devices(ctx, 2)
	if err != nil {
		return nil, err
	}
	var extra []string
	for range 3 {
		t, err := base.Devices(ctx, 1) // each a workspace of its own
		if err != nil {
			return nil, err
		}
		extra = append(extra, t[0])
	}
	env := &wiresuite.Env{BaseURL: p.Endpoints()[0], Token: tok[0], Token2: tok[1], OtherToken: extra[0],
		RevokeToken: extra[1], FreshToken: extra[2], MaxBody: 256 << 10, EventTimeout: 10 * time.Second}
	if rs, ok := p.(interface {
		RestartInstance(ctx context.Context, i int) error
	}); ok {
		env.Restart = func(ctx context.Context) error { return rs.RestartInstance(ctx, 0) }
	}
	return env, nil
}
