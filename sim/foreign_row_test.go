package sim

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestClientRow runs the client row of docs/testing-clients.md, `kbkit conformance run
// --client "node examples/client-js/adapter.mjs" --seeds N --faults` (the
// client alone on its pages, the kit as the other users), once per bug of
// the example client: the checker named for the bug must fail in the
// majority of the N seeds, and the correct client must pass every seed.
// N is KBKIT_CLIENT_ROW (`make client-row`: 20); unset, the test is
// skipped (TestForeignClientBugsAreCaught covers every bug in 3 seeds).
func TestClientRow(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("KBKIT_CLIENT_ROW"))
	if n <= 0 {
		t.Skip("set KBKIT_CLIENT_ROW=20 to run the client row of docs/testing-clients.md for every bug (make client-row)")
	}
	cl := exampleClient(t)
	// The command's echo timeout; a client slowed by a busy machine is
	// not given up (a hang detector only).
	row := Options{EchoTimeout: 10 * time.Second, ClientTimeout: hang}
	seeds := make([]int64, n)
	for i := range seeds {
		seeds[i] = int64(i)
	}
	var mu sync.Mutex
	var rows []string
	defer func() {
		slices.Sort(rows)
		t.Logf("the client row of docs/testing-clients.md, %d seeds with --faults, per bug of the example client:\n%-26s %-16s %s\n%s",
			n, "bug", "checker", "caught", strings.Join(rows, "\n"))
	}()
	t.Run("correct", func(t *testing.T) {
		for _, r := range runForeign(t, Options{Faults: true, Clients: []string{cl}, EchoTimeout: row.EchoTimeout, ClientTimeout: row.ClientTimeout}, seeds...) {
			for _, c := range r.Checks {
				if !c.Passed {
					t.Errorf("seed %d: %s failed:\n%s", r.Seed, c.Name, c.Detail)
				}
			}
		}
	})
	for _, tc := range clientBugs {
		t.Run(tc.bug, func(t *testing.T) {
			opts := Options{Faults: true, Clients: []string{cl + " --broken " + tc.bug}, EchoTimeout: row.EchoTimeout, ClientTimeout: row.ClientTimeout}
			caught := 0
			for _, r := range runForeign(t, opts, seeds...) {
				if slices.Contains(failedCheckers(r), tc.checker) {
					caught++
				}
			}
			mu.Lock()
			rows = append(rows, fmt.Sprintf("%-26s %-16s %d/%d", tc.bug, tc.checker, caught, n))
			mu.Unlock()
			if 2*caught <= n {
				t.Errorf("the client row caught %s by %s in %d of %d seeds, not a majority", tc.bug, tc.checker, caught, n)
			}
		})
	}
}
