package sim

import (
	"fmt"
	"io"
	"time"
)

// Options of a simulation run.
type Options struct {
	Seed    int64 // the first seed; seeds Seed, Seed+1, ... are run
	Seeds   int   // how many seeds (default 1)
	Windows int   // windows per seed (default 4; 0 with Clients)
	Pages   int   // pages per seed (default 3)
	Devices int   // devices per seed (default 2)
	Steps   int   // scheduler steps per seed (default 100)
	Faults  bool  // draw faults per seed (swarm style)
	// Bursts makes a third of the send steps post the next command of
	// every window at once, so the server decides concurrent commands (a
	// seed with bursts no longer replays exactly: the server orders them).
	Bursts bool
	// Parallel is how many seeds run at once (default 4). Seeds use
	// disjoint workspaces; a single seed is always sequential, so a seed
	// run alone replays exactly.
	Parallel int
	// EchoTimeout bounds the wait for an echo the server must send: a
	// window that makes no progress for this long is a protocol finding.
	EchoTimeout time.Duration
	// SeedTimeout bounds a whole seed, checks included (default 2m). A
	// seed that hits it fails the protocol checker, and the run starts no
	// further seed (see RunSeeds).
	SeedTimeout time.Duration
	// OutDir receives Porcupine's visualisation of a failed seed ("" = none).
	OutDir string
	// HTMLDir receives a timeline page (seed-N.html) of every seed that
	// failed or could not run ("" = none); with HTMLAll, of every seed.
	HTMLDir string
	HTMLAll bool
	// Clients are command lines of client adapters (spec/ADAPTER.md
	// section 7): each opens one foreign window per seed, on page k mod
	// Pages, beside the Windows of the kit (foreign.go).
	Clients []string
	// Others is how many kit windows act as the other users of each
	// client's page (adversary.go), beside the Windows: 0 is the default,
	// one per client; negative, none.
	Others int
	// ClientTimeout bounds one request to a client adapter (0:
	// EchoTimeout, at most 10 s); past it the client stopped answering
	// and its window is given up. Starting one (init) gets at least 30 s.
	ClientTimeout time.Duration
	// ClientStderr receives the client adapters' stderr (nil: os.Stderr).
	ClientStderr io.Writer
	// ClientFaults, when set, are the fault rates of the foreign windows'
	// proxies instead of the seed's drawn ones (tests aim them at a bug).
	ClientFaults *Faults
	// Choices replays a recorded choice list (choices.go) instead of
	// drawing from the seed: a list cut short or altered still runs (a
	// missing choice is the simplest). nil draws from the seed.
	Choices []int
	// ChoicesFile is the file Choices were read from, for the replay
	// command (ReplayCommand).
	ChoicesFile string
	// Where is the target the run drives, as the replay command must name
	// it (the CLI fills it in; replay.go).
	Where Where
	// Reruns is how often a failing seed is replayed from its recorded
	// choices before it is reported (Rerun; 0: not replayed): its report
	// says in how many of the runs it failed (SeedReport.Recurrence).
	Reruns int
	// Trace sends every history line to Logf as it happens.
	Trace bool
	// Logf receives progress and history lines (nil = silent).
	Logf func(format string, args ...any)
	// Progress is called after each seed.
	Progress func(done, total int, r SeedReport)
}

// others is the number of kit windows on each client's page.
func (o *Options) others() int {
	switch {
	case o.Others < 0:
		return 0
	case o.Others == 0:
		return 1
	}
	return o.Others
}

func (o *Options) defaults() {
	if o.Seeds <= 0 {
		o.Seeds = 1
	}
	if o.Windows < 0 || (o.Windows == 0 && len(o.Clients) == 0) {
		o.Windows = 4
	}
	if o.Pages <= 0 {
		o.Pages = 3
	}
	if o.Devices <= 0 {
		o.Devices = 2
	}
	if o.Steps <= 0 {
		o.Steps = 100
	}
	if o.Parallel <= 0 {
		o.Parallel = 4
	}
	if o.EchoTimeout <= 0 {
		o.EchoTimeout = DefaultEchoTimeout
	}
	if o.SeedTimeout <= 0 {
		o.SeedTimeout = DefaultSeedTimeout
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
}

// DefaultSeedTimeout bounds one seed when Options.SeedTimeout is zero: a
// seed of the default shape takes a few seconds on the reference server.
const DefaultSeedTimeout = 2 * time.Minute

// Faults are the fault rates drawn for one seed.
type Faults struct {
	Drop, Duplicate, Reorder, Cut, LoseResponse float64
	RestartInstance, RestartPostgres            bool
	Failover                                    bool
}

func (f Faults) String() string {
	s := fmt.Sprintf("drop=%.2f dup=%.2f reorder=%.2f cut=%.2f lose=%.2f restart-instance=%v restart-postgres=%v",
		f.Drop, f.Duplicate, f.Reorder, f.Cut, f.LoseResponse, f.RestartInstance, f.RestartPostgres)
	if f.Failover {
		s += " failover=true"
	}
	return s
}

// Stats count what happened in a seed.
type Stats struct {
	Commands   int `json:"commands"`
	Committed  int `json:"committed"`
	Rejected   int `json:"rejected"`
	LocalToast int `json:"local_toasts"`
	Retries    int `json:"retries"`
	Gaps       int `json:"gaps"`
	Refetches  int `json:"refetches"`
	Dropped    int `json:"dropped_echoes"`
	Duplicated int `json:"duplicated_echoes"`
	Reordered  int `json:"reordered_echoes"`
	Cuts       int `json:"socket_cuts"`
	LostResp   int `json:"lost_responses"`
	// ForcedLost counts the lost responses the rejection race forces
	// (whatever the drawn lose rate).
	ForcedLost int `json:"forced_lost_responses"`
	Restarts   int `json:"restarts"`
	// RejectedOutcomes counts rejections a refetch reported (a rejected
	// command whose answer was lost).
	RejectedOutcomes int `json:"rejected_outcomes"`
	Resumes          int `json:"resumes"`        // subscriptions opened after a seq
	Duplicates       int `json:"duplicate_acks"` // retries answered duplicate
	// RetriedRejections counts retries of a rejected id answered with
	// its rejection again.
	RetriedRejections int `json:"retried_rejections"`
	EchoStalls        int `json:"echo_stalls"` // waits that hit the echo timeout
	Failovers         int `json:"failovers"`
}

// CheckResult is one checker's verdict on a seed.
type CheckResult struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	// Skipped means the seed gave the checker nothing to check (it passed
	// vacuously); Detail says why. Skipped (the func) names the checkers
	// a whole run skipped.
	Skipped bool   `json:"skipped,omitempty"`
	Detail  string `json:"detail,omitempty"`
	// Evidence is how much the checker had to check in the seed, in
	// Unit ("rejections" for rollback): 0 with no finding is Skipped.
	Evidence int    `json:"evidence"`
	Unit     string `json:"unit,omitempty"`
}

// SeedReport is the outcome of one seed.
type SeedReport struct {
	Seed     int64         `json:"seed"`
	Faults   string        `json:"faults"`
	Checks   []CheckResult `json:"checks"`
	Stats    Stats         `json:"stats"`
	Duration time.Duration `json:"duration_ns"`
	// History is the tail of the scheduler's log, for a failing seed.
	History []string `json:"history,omitempty"`
	// Visualization is the path of Porcupine's HTML for a failed
	// linearizability check.
	Visualization string `json:"visualization,omitempty"`
	// Timeline is the path of the seed's timeline page (Options.HTMLDir).
	Timeline string `json:"timeline,omitempty"`
	// Err is set when the seed could not run (not a checker failure).
	Err string `json:"error,omitempty"`
	// Types counts the commands sent over the wire by type (setup
	// included; derived commands are the server's, not counted).
	Types map[string]int `json:"types,omitempty"`
	// Halt is why no further seed should start: the seed hit its deadline
	// or waited out an echo timeout (the server is not answering).
	Halt string `json:"halt,omitempty"`
	// ClientStart is set when a client adapter could not start (Err says
	// why): no further seed starts either.
	ClientStart bool `json:"client_start,omitempty"`
	// Clients is what each foreign window was given and saw.
	Clients []ClientCoverage `json:"clients,omitempty"`
	// Replay is the command line that runs this seed again
	// (ReplayCommand).
	Replay string `json:"replay"`
	// Shape is the size of the seed's history (what shrinking reduces).
	Shape Shape `json:"shape"`
	// Choices are every random decision the seed made (choices.go).
	Choices []int `json:"-"`
	// StepStarts are where each scheduler step's choices begin in Choices.
	StepStarts []int `json:"-"`
	// Shrunk is the outcome of shrinking this seed, if it was shrunk.
	Shrunk *ShrinkSummary `json:"shrunk,omitempty"`
	// Runs and FailedRuns: a failing seed replayed from its choices
	// (Rerun) ran Runs times, the first run included, and FailedRuns of
	// them failed a checker the first run failed (0 Runs: not replayed).
	Runs       int `json:"runs,omitempty"`
	FailedRuns int `json:"failed_runs,omitempty"`
}

// Recurrence says how often a replayed failing seed failed: "failed 3 of
// 3", "failed 2 of 3: timing-dependent", "failed 1 of 3: not
// reproducible, timing-dependent"; "" if it was not replayed.
func (r SeedReport) Recurrence() string {
	if r.Runs == 0 {
		return ""
	}
	s := fmt.Sprintf("failed %d of %d", r.FailedRuns, r.Runs)
	switch {
	case r.FailedRuns <= 1 && r.Runs > 1:
		s += ": not reproducible, timing-dependent"
	case r.FailedRuns < r.Runs:
		s += ": timing-dependent"
	}
	return s
}

// ShrinkSummary is what a report says of a seed's shrink (Shrunk.Summary).
type ShrinkSummary struct {
	Checker string `json:"checker"`
	Before  Shape  `json:"before"`
	After   Shape  `json:"after"`
	// Failed of Replays replays of the shrunk history failed Checker.
	Failed   int    `json:"failed"`
	Replays  int    `json:"replays"`
	Replay   string `json:"replay"`
	Timeline string `json:"timeline,omitempty"`
	// NotShrunk is why the seed was not shrunk (the failure did not
	// recur under replay); the other fields but Checker are then empty.
	NotShrunk string `json:"not_shrunk,omitempty"`
}

// Shape is the size of a seed's history: the scheduler steps it ran,
// windows, pages (setup's and created), devices, injected faults, the
// commands its windows sent and its choices.
type Shape struct {
	Steps    int `json:"steps"`
	Windows  int `json:"windows"`
	Pages    int `json:"pages"`
	Devices  int `json:"devices"`
	Faults   int `json:"faults"`
	Commands int `json:"commands"`
	Choices  int `json:"choices"`
}

// Failed reports whether a checker failed.
func (r SeedReport) Failed() bool {
	for _, c := range r.Checks {
		if !c.Passed {
			return true
		}
	}
	return false
}

// win is one simulated window: a kbcore.Window, its device's client and its
// subscription.
