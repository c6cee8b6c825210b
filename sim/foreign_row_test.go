package sim

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subspace/kbkit/internal/longtest"
)

// The short client row: every bug of the example client at rowSeeds
// seeds, each caught in at least rowBar of them (make test-long).
const (
	rowSeeds = 6
	rowBar   = 3
	// rowParallel seeds run at once, bugs mixed: a seed mostly waits on
	// its client and the proxy's timers.
	rowParallel = 16
)

// TestClientRow runs the client row of docs/testing-clients.md, `kbkit conformance run
// --client "node examples/client-js/adapter.mjs" --seeds N --faults` (the
// client alone on its pages, the kit as the other users), once per bug of
// the example client: the checker named for the bug must fail in the
// majority of the N seeds, and the correct client must pass every seed.
// N is KBKIT_CLIENT_ROW (`make client-row`: 20). Unset, it is the short
// row of make test-long: rowSeeds seeds per bug, each caught in at least
// rowBar, or the short of its clientBugs row (a bug whose short is -1 is
// left out of both rows; TestForeignClientBugsAreCaught covers every bug
// in 3 seeds, with options chosen per bug). KBKIT_CLIENT_ROW_BUGS, a regular expression,
// runs only the bugs it matches (and the correct client only if it
// matches "correct").
func TestClientRow(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("KBKIT_CLIENT_ROW"))
	short := n <= 0
	if short {
		longtest.Mark(t)
		n = rowSeeds
	}
	// need is how many of its n seeds must catch a bug.
	need := func(tc clientBug) int {
		switch {
		case !short:
			return n/2 + 1
		case tc.short > 0:
			return tc.short
		}
		return rowBar
	}
	cl := exampleClient(t)
	e := embedded(t, EmbeddedOptions{})
	// The command's echo timeout; a client slowed by a busy machine is
	// not given up (a hang detector only).
	row := Options{Faults: true, EchoTimeout: 10 * time.Second, ClientTimeout: hang, ClientStderr: &testWriter{t: t}}
	type job struct {
		bug  string // "" for the correct client
		seed int64
	}
	only, err := regexp.Compile(os.Getenv("KBKIT_CLIENT_ROW_BUGS"))
	if err != nil {
		t.Fatalf("KBKIT_CLIENT_ROW_BUGS: %v", err)
	}
	var jobs []job
	for _, b := range append([]string{""}, bugNames()...) {
		if !only.MatchString(cmp.Or(b, "correct")) || (b != "" && bug(b).short < 0) {
			continue
		}
		for seed := range int64(n) {
			jobs = append(jobs, job{b, seed})
		}
	}
	// A hang detector for the row together (each seed has its SeedTimeout).
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(5*(len(jobs)+rowParallel-1)/rowParallel)*hang)
	defer cancel()
	reports := make([]SeedReport, len(jobs))
	var wg sync.WaitGroup
	slots := make(chan struct{}, rowParallel)
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			opts := row
			opts.Clients = []string{cl}
			if j.bug != "" {
				opts.Clients = []string{cl + " --broken " + j.bug}
			}
			reports[i] = RunSeed(ctx, e, opts, j.seed)
		}()
	}
	wg.Wait()
	caught := map[string]int{}
	for i, r := range reports {
		j := jobs[i]
		if r.Err != "" {
			t.Fatalf("%s seed %d could not run: %s\n%s", j.bug, r.Seed, r.Err, tail(r.History, 30))
		}
		t.Logf("%s seed %d: failed %v (%s; %+v; %v)", cmp.Or(j.bug, "correct"), r.Seed, failedCheckers(r), r.Faults, r.Stats, r.Clients)
		if j.bug == "" {
			for _, c := range r.Checks {
				if !c.Passed {
					t.Errorf("the correct client, seed %d: %s failed:\n%s", r.Seed, c.Name, c.Detail)
				}
			}
			continue
		}
		if slices.Contains(failedCheckers(r), bug(j.bug).checker) {
			caught[j.bug]++
		}
	}
	var rows []string
	for _, tc := range clientBugs {
		if !only.MatchString(tc.bug) || tc.short < 0 {
			continue
		}
		rows = append(rows, fmt.Sprintf("%-26s %-16s %d/%d", tc.bug, tc.checker, caught[tc.bug], n))
		if caught[tc.bug] < need(tc) {
			t.Errorf("the client row caught %s by %s in %d of %d seeds, fewer than %d", tc.bug, tc.checker, caught[tc.bug], n, need(tc))
		}
	}
	t.Logf("the client row of docs/testing-clients.md, %d seeds with --faults, per bug of the example client:\n%-26s %-16s %s\n%s",
		n, "bug", "checker", "caught", strings.Join(rows, "\n"))
}

func bugNames() []string {
	var out []string
	for _, tc := range clientBugs {
		out = append(out, tc.bug)
	}
	return out
}

// bug is the clientBugs row of name.
func bug(name string) clientBug {
	for _, tc := range clientBugs {
		if tc.bug == name {
			return tc
		}
	}
	return clientBug{}
}
