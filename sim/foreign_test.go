package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subspace/kbkit/spec/schema"
)

// The foreign-client tests drive the example client of examples/client-js
// (Node, @trpc/client) through the client suite of the adapter protocol:
// correct, it passes every checker alone and beside the kit's windows;
// with each of its --broken bugs, the checker guarding that guarantee
// fails. They need node and `npm ci` in examples/client-js; without them
// they skip, unless KBKIT_REQUIRE_NODE is set (CI), then they fail.

func exampleClient(t *testing.T) string {
	t.Helper()
	require := os.Getenv("KBKIT_REQUIRE_NODE") != ""
	if _, err := exec.LookPath("node"); err != nil {
		if require {
			t.Fatal("node is not installed but KBKIT_REQUIRE_NODE is set")
		}
		t.Skip("node is not installed")
	}
	dir, err := filepath.Abs(filepath.Join("..", "examples", "client-js"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@trpc", "client")); err != nil {
		if require {
			t.Fatalf("examples/client-js has no node_modules but KBKIT_REQUIRE_NODE is set: run npm ci there (%v)", err)
		}
		t.Skip("examples/client-js: run npm ci first")
	}
	return "node " + filepath.Join(dir, "adapter.mjs")
}

// runForeign runs seeds (in parallel) against one embedded server.
func runForeign(t *testing.T, opts Options, seeds ...int64) []SeedReport {
	t.Helper()
	e := embedded(t, EmbeddedOptions{})
	if opts.EchoTimeout == 0 {
		opts.EchoTimeout = 3 * time.Second
	}
	opts.ClientStderr = &testWriter{t: t}
	// At most 4 seeds at once; the deadline is a hang detector for the
	// seeds together (each has its SeedTimeout).
	const parallel = 4
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(5*(len(seeds)+parallel-1)/parallel)*hang)
	defer cancel()
	reports := make([]SeedReport, len(seeds))
	var wg sync.WaitGroup
	slots := make(chan struct{}, parallel)
	for i, seed := range seeds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			reports[i] = RunSeed(ctx, e, opts, seed)
		}()
	}
	wg.Wait()
	for _, r := range reports {
		if r.Err != "" {
			t.Fatalf("seed %d could not run: %s\n%s", r.Seed, r.Err, tail(r.History, 30))
		}
		t.Logf("seed %d: failed %v (%s; %+v; %v)", r.Seed, failedCheckers(r), r.Faults, r.Stats, r.Clients)
	}
	return reports
}

// testWriter sends the clients' stderr to the test log.
type testWriter struct {
	mu sync.Mutex
	t  *testing.T
}

func (w *testWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if os.Getenv("KBKIT_CLIENT_DEBUG") != "" {
		w.t.Logf("%s", strings.TrimRight(string(b), "\n"))
	}
	return len(b), nil
}

func TestForeignClientPasses(t *testing.T) {
	cl := exampleClient(t)
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"alone", Options{Clients: []string{cl}, Faults: true, Steps: 60, EchoTimeout: hang, ClientTimeout: hang}},
		{"mixed", Options{Windows: 2, Clients: []string{cl, cl}, Faults: true, Steps: 60, EchoTimeout: hang, ClientTimeout: hang}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			intents := map[string]int{}
			ran := map[string]int{}
			for _, r := range runForeign(t, tc.opts, 0, 1, 2) {
				for _, c := range r.Checks {
					if !c.Passed {
						t.Errorf("seed %d: %s failed:\n%s\n%s", r.Seed, c.Name, c.Detail, tail(r.History, 40))
					}
					if !c.Skipped {
						ran[c.Name]++
					}
				}
				if len(r.Clients) != len(tc.opts.Clients) {
					t.Errorf("seed %d: coverage of %d clients, want %d", r.Seed, len(r.Clients), len(tc.opts.Clients))
				}
				for _, c := range r.Clients {
					for k, n := range c.Intents {
						intents[k] += n
					}
				}
			}
			for _, in := range []string{"create-after", "edit-text", "delete", "move-node", "indent", "outdent", "undo"} {
				if intents[in] == 0 {
					t.Errorf("no %s intent was drawn in 3 seeds: %v", in, intents)
				}
			}
			// The client rules had something to hold the client to.
			for _, name := range []string{CheckLocalRejection, CheckPending} {
				if ran[name] == 0 {
					t.Errorf("the %s checker was skipped in all 3 seeds", name)
				}
			}
		})
	}
}

// A client that declares page operations (the example client with
// --page-intents: rename-page, set-aliases and merge-page) is given them, performs
// them under faults beside a reference window on its page, and every
// checker holds; the coverage names them. Without the flag it declares
// none and is given none (TestForeignClientPasses draws as before).
func TestForeignClientPageIntents(t *testing.T) {
	cl := exampleClient(t) + " --page-intents"
	for _, tc := range []struct {
		name string
		opts Options
	}{
		// Alone (Others: -1), every command sent is a client's: the page
		// operations sent are the clients' own.
		{"alone", Options{Clients: []string{cl, cl}, Others: -1, Faults: true, Steps: 80, EchoTimeout: hang, ClientTimeout: hang}},
		// The kit's windows only (Others: -1): the kit as the other
		// users merges a client's page late in a seed, before the client
		// is given its own merge.
		{"mixed", Options{Windows: 2, Others: -1, Clients: []string{cl, cl}, Faults: true, Steps: 80, EchoTimeout: hang, ClientTimeout: hang}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			intents, sent := map[string]int{}, map[string]int{}
			for _, r := range runForeign(t, tc.opts, 0, 1, 2, 3) {
				for _, c := range r.Checks {
					if !c.Passed {
						t.Errorf("seed %d: %s failed:\n%s\n%s", r.Seed, c.Name, c.Detail, tail(r.History, 40))
					}
				}
				for _, c := range r.Clients {
					for k, n := range c.Intents {
						intents[k] += n
					}
				}
				for k, n := range r.Types {
					sent[k] += n
				}
			}
			for _, in := range []string{"rename-page", "set-aliases", "merge-page"} {
				if intents[in] == 0 {
					t.Errorf("no %s intent was given in 4 seeds: %v", in, intents)
				}
				if tc.name == "alone" && sent[in] == 0 {
					t.Errorf("no %s reached the server in 4 seeds: the clients did not perform it (%v)", in, sent)
				}
			}
			t.Logf("intents given: %v; commands sent: %v", intents, sent)
		})
	}
}

// clientBugs are the bugs of the example client
// (examples/client-js/window.mjs, BROKEN), each with the checker that
// must catch it and options under which it shows in a few seeds. short
// is what the short client row (TestClientRow, make test-long) asks of a
// bug that shows only on faults a seed draws or not: caught in at least
// that many of its seeds (0: rowBar; -1: left out of it, and why).
type clientBug struct {
	bug, checker string
	opts         Options
	short        int
}

var clientBugs = []clientBug{
	{"new-id-on-retry", CheckExactlyOnce, Options{Faults: true, ClientFaults: &Faults{LoseResponse: 0.2}}, 0},
	// A gap needs a dropped echo with an event after it.
	{"no-refetch", CheckRefetch, Options{Faults: true, ClientFaults: &Faults{Drop: 0.3}}, 1},
	{"keep-rejected", CheckRollback, Options{Windows: 2, Pages: 1, Steps: 150}, 0},
	{"drop-pending-on-reconnect", CheckExactlyOnce, Options{Faults: true, ClientFaults: &Faults{}}, 0},
	{"resume-from-zero", CheckResume, Options{Faults: true, ClientFaults: &Faults{}}, 0},
	{"echo-on-top", CheckConvergence, Options{}, 0},
	// The client rules (foreign_rules.go).
	{"duplicate-twice", CheckConvergence, Options{Faults: true, ClientFaults: &Faults{Duplicate: 0.3}}, 0},
	// Echoes out of order: a drawn reorder, or a late concurrent insert.
	{"out-of-order", CheckConvergence, Options{Faults: true, ClientFaults: &Faults{Reorder: 0.3}}, 2},
	{"give-up", CheckPending, Options{Faults: true, ClientFaults: &Faults{LoseResponse: 0.5, Drop: 0.5}}, 0},
	{"no-local-toast", CheckLocalRejection, Options{}, 0},
	{"send-local-rejections", CheckLocalRejection, Options{}, 0},
	{"resubscribe-wrong-seq", CheckResume, Options{Faults: true, ClientFaults: &Faults{}}, 0},
	// A gap needs a dropped echo with an event after it.
	{"resubscribe-past-gap", CheckResume, Options{Faults: true, ClientFaults: &Faults{Drop: 0.3, Cut: 0.1}}, 1},
	// The kit as the server refuses a post (400): final, not resent.
	{"resend-refused", CheckRollback, Options{}, 0},
	// The end of a seed drops the client's own echo, nothing after it.
	// Left out of the rows: in many seeds @trpc/client's wsLink opens a
	// new socket on its own a few seconds after the probe's drop and
	// resumes from the last event it received, so the echo comes without
	// the window noticing it was overdue.
	{"no-echo-timer", CheckResume, Options{Faults: true, ClientFaults: &Faults{}}, -1},
	// Toasts name the command they reject, and only that one.
	{"toast-wrong-id", CheckRollback, Options{}, 0},
	{"undo-toast-id", CheckLocalRejection, Options{}, 0},
	// Others' echoes applied on top, and no server document to
	// compare with: the kit's own fold of the log catches it.
	{"no-server-doc", CheckConvergence, Options{Windows: 2, Pages: 1, Steps: 200}, 0},
	// The zoo (selftest/zoo.go): PowerSync's local changes reverted.
	// A refetch while commands are pending, and a reply before the next
	// echo.
	{"revert-pending-on-refetch", CheckConvergence, Options{Faults: true, Steps: 200, ClientFaults: &Faults{Drop: 0.5}}, 1},
}

// Each bug of the example client breaks one guarantee; the checker named
// must catch it in a few seeds: three at a time, until one of them
// catches it or nine ran (how often each bug is caught per seed is
// measured by TestClientRow).
func TestForeignClientBugsAreCaught(t *testing.T) {
	cl := exampleClient(t)
	for _, tc := range clientBugs {
		t.Run(tc.bug, func(t *testing.T) {
			opts := tc.opts
			opts.Clients = []string{cl + " --broken " + tc.bug}
			opts.ClientTimeout = hang // a slow client is not the bug under test
			var caught []int64
			var ran int
			for first := int64(0); first < 9 && len(caught) == 0; first += 3 {
				ran += 3
				caught = append(caught, bugCaught(t, tc.bug, tc.checker, runForeign(t, opts, first, first+1, first+2))...)
			}
			if len(caught) == 0 {
				t.Fatalf("the %s checker caught the client bug %s in none of %d seeds", tc.checker, tc.bug, ran)
			}
			t.Logf("%s caught %s in seeds %v", tc.checker, tc.bug, caught)
		})
	}
}

// bugCaught returns the seeds of rs whose checker failed, checking that a
// no-server-doc finding came from the kit's fold of the log.
func bugCaught(t *testing.T, bug, checker string, rs []SeedReport) []int64 {
	t.Helper()
	var caught []int64
	for _, r := range rs {
		if !slices.Contains(failedCheckers(r), checker) {
			continue
		}
		caught = append(caught, r.Seed)
		if bug == "no-server-doc" {
			for _, c := range r.Checks {
				if c.Name == checker && !strings.Contains(c.Detail, "not the fold of the log's first") {
					t.Errorf("seed %d: %s did not come from the kit's fold of the log:\n%s", r.Seed, checker, c.Detail)
				}
			}
		}
	}
	return caught
}

// The client suite's messages, as the runner sends them and the example
// client answers them, match spec/schema/adapter.
func TestForeignClientMessagesMatchSchemas(t *testing.T) {
	cl := exampleClient(t)
	if _, err := exec.LookPath("tee"); err != nil {
		t.Skip("no tee")
	}
	dir := t.TempDir()
	req, rep := filepath.Join(dir, "requests.ndjson"), filepath.Join(dir, "replies.ndjson")
	line := "sh -c " + shellQuote("tee "+req+" | "+cl+" | tee "+rep)
	runForeign(t, Options{Windows: 1, Clients: []string{line}, Faults: true, Steps: 40}, 0)
	seen := map[string]int{}
	for _, path := range []string{req, rep} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var h struct{ Type string }
			_ = json.Unmarshal([]byte(l), &h)
			seen[h.Type]++
			if err := schema.ValidateAdapterMessage([]byte(l)); err != nil {
				t.Errorf("%s: %v\n%.300s", filepath.Base(path), err, l)
			}
		}
	}
	for _, typ := range []string{"init", "init_ok", "open", "open_ok", "intent", "intent_ok", "state", "state_ok", "close", "close_ok"} {
		if seen[typ] == 0 {
			t.Errorf("no %s message was exchanged: %v", typ, seen)
		}
	}
}

// A client that stops answering is a protocol finding that names it, the
// seed still ends, and its process group is killed.
func TestForeignClientThatStopsAnswering(t *testing.T) {
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("needs /proc to look for leftover processes")
	}
	marker := fmt.Sprintf("kbkit-hang-%d", time.Now().UnixNano())
	// Answers init, then never again (the open times out).
	script := `read l; echo '{"type":"init_ok","in_reply_to":1,"suites":["client"],"intents":["edit-text"]}'; sleep 600; : ` + marker
	opts := Options{Windows: 1, Others: -1, Clients: []string{"sh -c " + shellQuote(script)}, EchoTimeout: time.Second, Steps: 20}
	start := time.Now()
	r := runForeign(t, opts, 0)[0]
	var protocol string
	for _, c := range r.Checks {
		if c.Name == CheckProtocol {
			protocol = c.Detail
		}
	}
	if !strings.Contains(protocol, "w1 (sh -c") || !strings.Contains(protocol, "stopped answering") {
		t.Errorf("the protocol checker does not name the client that stopped answering: %q", protocol)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("the seed took %s", d)
	}
	deadline := time.Now().Add(hang)
	for {
		left := processesWith(marker)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the client's processes are still running: %v", left)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// processesWith lists the pids whose command line holds s.
func processesWith(s string) []string {
	var out []string
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) {
			out = append(out, d.Name())
		}
	}
	return out
}

// A client adapter that does not declare the client suite, or declares
// no intent or an unknown one, cannot run (target.ErrCannotRun), and says why.
func TestForeignClientInitIsChecked(t *testing.T) {
	e := embedded(t, EmbeddedOptions{})
	for _, tc := range []struct{ initOK, want string }{
		{`{"type":"init_ok","in_reply_to":1,"suites":["commands"]}`, `does not list suite "client"`},
		{`{"type":"init_ok","in_reply_to":1,"suites":["client"],"intents":[]}`, "lists no intents"},
		{`{"type":"init_ok","in_reply_to":1,"suites":["client"],"intents":["fly"]}`, `lists intent "fly"`},
	} {
		script := "read l; echo " + shellQuote(tc.initOK) + "; cat >/dev/null"
		r := RunSeed(context.Background(), e, Options{Windows: 1, Clients: []string{"sh -c " + shellQuote(script)}, Steps: 5}, 0)
		if !strings.Contains(r.Err, "cannot run") || !strings.Contains(r.Err, tc.want) {
			t.Errorf("init_ok %s: err %q, want it to say %q", tc.initOK, r.Err, tc.want)
		}
	}
}
