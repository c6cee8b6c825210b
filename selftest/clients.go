package selftest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/subspace/kbkit/sim"
)

// clientOptions are the simulator's options per bug of the example client
// (examples/client-js, BROKEN): the faults its bug needs to show. A bug
// not named here runs with faults on the client's own connection.
var clientOptions = map[string]sim.Options{
	"new-id-on-retry":           {Faults: true, ClientFaults: &sim.Faults{LoseResponse: 0.2}},
	"no-refetch":                {Faults: true, ClientFaults: &sim.Faults{Drop: 0.3}},
	"keep-rejected":             {Windows: 2, Pages: 1, Steps: 150},
	"drop-pending-on-reconnect": {Faults: true, ClientFaults: &sim.Faults{}},
	"resume-from-zero":          {Faults: true, ClientFaults: &sim.Faults{}},
	"echo-on-top":               {},
	"duplicate-twice":           {Faults: true, ClientFaults: &sim.Faults{Duplicate: 0.3}},
	"out-of-order":              {Faults: true, ClientFaults: &sim.Faults{Reorder: 0.3}},
	"give-up":                   {Faults: true, ClientFaults: &sim.Faults{LoseResponse: 0.5, Drop: 0.5}},
	"no-local-toast":            {},
	"send-local-rejections":     {},
	"resubscribe-wrong-seq":     {Faults: true, ClientFaults: &sim.Faults{}},
	"no-server-doc":             {Windows: 2, Pages: 1, Steps: 200},
	"resubscribe-past-gap":      {Faults: true, ClientFaults: &sim.Faults{Drop: 0.3, Cut: 0.1}},
	"resend-refused":            {},
	"no-echo-timer":             {Faults: true, ClientFaults: &sim.Faults{}},
	"toast-wrong-id":            {},
	"undo-toast-id":             {},
}

func clientSimOptions(bug string) sim.Options {
	o, ok := clientOptions[bug]
	if !ok {
		if z, ok := zooEntry(bug); ok && z.Options != nil {
			o = *z.Options
		} else {
			o = sim.Options{Faults: true, ClientFaults: &sim.Faults{Drop: 0.2, LoseResponse: 0.2}}
		}
	}
	if o.EchoTimeout == 0 {
		o.EchoTimeout = 3 * time.Second
	}
	if o.SeedTimeout == 0 {
		o.SeedTimeout = 2 * time.Minute
	}
	o.Parallel = 1
	o.ClientStderr = io.Discard
	return o
}

// exampleClient is the command line of the example client's adapter, or
// why it cannot run.
func exampleClient(root string) (string, error) {
	dir := filepath.Join(root, "examples", "client-js")
	if _, err := exec.LookPath("node"); err != nil {
		return "", fmt.Errorf("node is not installed: the example client cannot run")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@trpc", "client")); err != nil {
		return "", fmt.Errorf("examples/client-js has no node_modules: run npm ci there")
	}
	return "node " + filepath.Join(dir, "adapter.mjs"), nil
}

// ClientBugs lists the example client's --broken bugs (window.mjs's
// BROKEN), asked of the client itself.
func ClientBugs(ctx context.Context, root string) (map[string]string, error) {
	file := filepath.Join(root, "examples", "client-js", "window.mjs")
	cmd := exec.CommandContext(ctx, "node", "--input-type=module", "-e",
		`const m = await import(process.argv[1]); process.stdout.write(JSON.stringify(m.BROKEN));`, "file://"+file)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("listing the example client's bugs: %v: %s", err, cut(stderr.String(), 300))
	}
	var bugs map[string]string
	if err := json.Unmarshal(out, &bugs); err != nil || len(bugs) == 0 {
		return nil, fmt.Errorf("the example client lists no bugs (%q)", cut(string(out), 100))
	}
	return bugs, nil
}

// runClients runs the unbroken example client (the positive control),
// then each of its bugs, under the client suite.
func runClients(ctx context.Context, opts *Options, tgt sim.Target) []Result {
	cl, err := exampleClient(opts.Root)
	var bugs map[string]string
	if err == nil {
		bugs, err = ClientBugs(ctx, opts.Root)
	}
	if err != nil {
		return []Result{{Kind: KindClient, Name: "(examples/client-js)", Suite: SuiteClient, Status: Errored, Detail: err.Error()}}
	}
	names := make([]string, 0, len(bugs))
	for b := range bugs {
		if opts.selected(b) {
			names = append(names, b)
		}
	}
	sort.Strings(names)
	pos := clientAtRest(ctx, opts, tgt, cl, names)
	out := []Result{pos}
	opts.logf("selftest: the example client unbroken under %s: %s", SuiteClient, pos.Status)
	if pos.Status != Passed {
		return out
	}
	for _, bug := range names {
		kind := KindClient
		if _, ok := zooEntry(bug); ok {
			kind = KindZoo
		}
		r := clientControl(ctx, opts, tgt, cl, kind, bug, bugs[bug])
		opts.logf("selftest: %s %s under %s: %s %v", kind, bug, SuiteClient, r.Status, r.CaughtBy)
		out = append(out, r)
	}
	return append(out, missingZoo(opts, KindClient, out)...)
}

// clientAtRest runs the unbroken client with the options of every bug
// of bugs, one seed each: every checker must pass.
func clientAtRest(ctx context.Context, opts *Options, tgt sim.Target, cl string, bugs []string) Result {
	start := time.Now()
	r := Result{Kind: KindPositive, Name: "example client", Breaks: "examples/client-js without --broken", Suite: SuiteClient, Status: Passed}
	seen := map[string]bool{}
	for _, b := range bugs {
		o := clientSimOptions(b)
		key := fmt.Sprintf("%v %v %v %v %v", o.Faults, o.Windows, o.Pages, o.Steps, o.ClientFaults)
		if o.ClientFaults != nil {
			key += fmt.Sprintf("%+v", *o.ClientFaults)
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		o.Clients = []string{cl}
		rep := sim.RunSeed(ctx, tgt, o, 1)
		r.Seeds++
		if rep.Err != "" {
			r.Status, r.Detail = Errored, "could not run: "+rep.Err
			break
		}
		if f := failed(rep); len(f) > 0 {
			r.Status, r.CaughtBy, r.Detail = Errored, f, "the unbroken client fails: "+firstFinding(rep)
			break
		}
	}
	r.Seconds = time.Since(start).Seconds()
	return r
}

// clientControl runs seeds 0, 1, ... of the bug's options until a checker
// fails or the profile's seeds are spent.
func clientControl(ctx context.Context, opts *Options, tgt sim.Target, cl, kind, bug, breaks string) (r Result) {
	o := clientSimOptions(bug)
	o.Clients = []string{cl + " --broken " + bug}
	r = Result{Kind: kind, Name: bug, Breaks: breaks, Suite: SuiteClient, Status: Missed}
	start := time.Now()
	defer func() { r.Seconds = time.Since(start).Seconds() }()
	for seed := int64(0); seed < int64(opts.Profile.Seeds); seed++ {
		rep := sim.RunSeed(ctx, tgt, o, seed)
		r.Seeds++
		if rep.Err != "" {
			r.Status, r.Detail = Errored, fmt.Sprintf("seed %d could not run: %s", seed, rep.Err)
			return r
		}
		if f := failed(rep); len(f) > 0 {
			r.Status, r.CaughtBy, r.Seed, r.Detail = Caught, f, ptr(seed), firstFinding(rep)
			r.Reproducer = strings.Join(slices.DeleteFunc([]string{
				`kbkit conformance run --client "node examples/client-js/adapter.mjs --broken ` + bug + `"`,
				simFlags(o), fmt.Sprintf("--seed %d --seeds 1", seed)}, func(s string) bool { return s == "" }), " ")
			if o.ClientFaults != nil {
				// The client's own fault rates have no flag: selftest sets them.
				r.Reproducer = fmt.Sprintf("kbkit selftest --parts clients --only '^%s$' --seeds %d", bug, seed+1)
			}
			return r
		}
	}
	r.Detail = fmt.Sprintf("no checker failed in %d seeds", r.Seeds)
	return r
}
