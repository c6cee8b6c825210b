package findmax

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"runtime"
	"strings"
	"time"

	"github.com/subspace/kbkit/loadgen"
	lgmetrics "github.com/subspace/kbkit/loadgen/metrics"
	"github.com/subspace/kbkit/loadgen/threshold"
	"github.com/subspace/kbkit/target"
)

// Version is the version of the JSON result format.
const Version = 1

// DefaultObjective is the objective of a search given no threshold.
var DefaultObjective = []string{"commit.p99<100ms", "errors==0"}

// DefaultAchieved joins every objective that says nothing of achieved: a
// step whose server committed under 90 % of what was due did not sustain
// its rate, whatever its latencies.
const DefaultAchieved = "achieved>=0.9"

// Where a step's run ran out (Step.Generator.Limit, Result.LimitedBy).
const (
	LimitServer    = "server"           // the objective broke while the generator had headroom
	LimitGenerator = "generator"        // the generator used its cores, or its goroutines waited for one
	LimitMachine   = "machine"          // every core of the machine was busy (generator, server, others)
	LimitShared    = "generator+server" // the embedded server and the generator used every core of their process
	LimitEditors   = "editors"          // every editor was busy: operations dropped with latencies in bounds
)

// SaturatedShare is the share of the cores past which a process, or the
// machine, counts as out of CPU.
const SaturatedShare = 0.9

// StarvedWait is the 99th percentile of the generator's goroutines' wait
// for a CPU (runnable, not running) past which the generator counts as
// starved: its operations then start late and its latencies include the
// wait, whatever the server did.
const StarvedWait = 5 * time.Millisecond

// Config is one search.
type Config struct {
	// Run is every step's run: workload, editors, commands, warm-up,
	// drain, seed. Model, Pacer and RunID are set per step; Duration is
	// the step's length.
	Run loadgen.Config
	// Plan bounds the search.
	Plan Plan
	// Objective: a step passes when every threshold holds. Without an
	// achieved threshold, DefaultAchieved is added.
	Objective []threshold.Threshold
	// Target is the server under load.
	Target target.Target
	// Embedded says the server runs in this process: its CPU is the
	// generator's process's.
	Embedded bool
	// ServerMetrics, when set, is the server's Prometheus page (/metrics):
	// its process_cpu_seconds_total gives the server's CPU per step.
	ServerMetrics string
	// Attempts is how many times a step the machine stood still during
	// (metrics.Result.PausedSeconds) runs (default 3).
	Attempts int
	// OnStep, if set, is called with each step as it ends.
	OnStep func(Step)
	// Logf, if set, receives progress messages.
	Logf func(format string, args ...any)

	// runStep, when set (tests), replaces a step's run: it returns the
	// step's measurements, which Find reads as it reads a real run's.
	runStep func(ctx context.Context, rate float64, stage string, editors int) (Step, error)
}

// GeneratorCPU is the generator's process over a step's load.
type GeneratorCPU struct {
	// Cores is its CPU time over the load's seconds: the cores it used.
	Cores float64 `json:"cores"`
	// Usable is the cores its goroutines can run on at once.
	Usable float64 `json:"usable_cores"`
	// WaitP99Ms is the 99th percentile of the time its goroutines waited,
	// runnable, for a CPU (the Go scheduler's latency), -1 if unknown.
	WaitP99Ms float64 `json:"wait_p99_ms"`
	// WithServer says the server ran in this process: Cores is both's.
	WithServer bool `json:"with_server,omitempty"`
	// Limit is where it ran out: "" (it did not), LimitGenerator,
	// LimitShared or LimitEditors.
	Limit string `json:"limit,omitempty"`
}

// MachineCPU is the machine's CPU over a step's load (Linux).
type MachineCPU struct {
	Cores int     `json:"cores"`
	Busy  float64 `json:"busy_cores"`
	// Steal is the time a hypervisor ran other guests on this guest's
	// cores, in cores.
	Steal float64 `json:"steal_cores"`
	// Others is Busy less the generator's process and, for a server on
	// this machine, the server's: other processes, PostgreSQL among them
	// when it runs here.
	Others float64 `json:"others_cores"`
}

// Step is one rate tried.
type Step struct {
	Rate  float64 `json:"rate"`
	Stage string  `json:"stage"`
	// Editors is the virtual editors the step ran (0 in results written
	// before it was recorded: the run's).
	Editors int  `json:"editors,omitempty"`
	Pass    bool `json:"pass"`
	// Broken is the first threshold of the objective the step broke.
	Broken string            `json:"broken,omitempty"`
	Checks []lgmetrics.Check `json:"checks"`
	// Achieved is the commands committed per second.
	Achieved  float64 `json:"achieved"`
	Due       int64   `json:"due"`
	Committed int64   `json:"committed"`
	Dropped   int64   `json:"dropped"`
	Errors    int64   `json:"errors"`
	// CommitP99Ms and FanoutP99Ms are -1 without a sample.
	CommitP99Ms  float64 `json:"commit_p99_ms"`
	FanoutP99Ms  float64 `json:"fanout_p99_ms"`
	PeakInFlight int64   `json:"peak_in_flight"`
	Seconds      float64 `json:"seconds"`
	// PausedSeconds: the machine stood still during the step's last
	// attempt (each attempt that paused ran again, up to Config.Attempts).
	PausedSeconds float64      `json:"paused_seconds,omitempty"`
	Generator     GeneratorCPU `json:"generator"`
	// ServerCores is the server's CPU in cores, when its metrics say.
	ServerCores *float64 `json:"server_cores,omitempty"`
	// Machine is nil where the machine's CPU cannot be read.
	Machine *MachineCPU `json:"machine,omitempty"`
	// MachineSaturated says every core of the machine was busy.
	MachineSaturated bool `json:"machine_saturated,omitempty"`

	// Result is the step's full result (not in the JSON; --dir writes it).
	Result *lgmetrics.Result `json:"-"`
}

// Result is a search's outcome: the JSON `kbkit loadgen find-max --json`
// writes.
type Result struct {
	Version   int               `json:"version"`
	Run       lgmetrics.RunInfo `json:"run"`
	Objective []string          `json:"objective"`
	Plan      Plan              `json:"plan"`
	Steps     []Step            `json:"steps"`
	Start     time.Time         `json:"start"`
	End       time.Time         `json:"end"`
	Host      Host              `json:"host"`
	Outcome   Outcome           `json:"outcome"`
	Verdict   Verdict           `json:"verdict"`
}

// Host is the machine the generator ran on.
type Host struct {
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	Go         string `json:"go"`
}

// Verdict says what the search found.
type Verdict struct {
	// Sustainable is the highest rate that met the objective (0: none).
	Sustainable float64 `json:"sustainable_rate"`
	// Next is the lowest rate above it that broke the objective (0: none).
	Next float64 `json:"next_rate,omitempty"`
	// Broken is the first threshold the Next step broke, with its actual.
	Broken string `json:"broken,omitempty"`
	// LimitedBy is what ran out at Next: LimitServer, LimitGenerator,
	// LimitMachine, LimitShared or LimitEditors ("" when no step broke
	// the objective).
	LimitedBy string `json:"limited_by,omitempty"`
	// Why says it in a sentence, with the figures.
	Why string `json:"why"`
	// LowerBound says Sustainable is a lower bound of the server's
	// capacity: something other than the server ran out first.
	LowerBound bool `json:"lower_bound,omitempty"`
	// Editors is the editors of the search's last step: the run's, or
	// more where steps ran out of editors (Plan.MaxEditors).
	Editors int `json:"editors,omitempty"`
	// GeneratorRanOut is the lowest rate whose step found the generator
	// out of CPU or starved of it (0: none did); other steps may have
	// found it so too (each step's Generator.Limit).
	GeneratorRanOut float64 `json:"generator_ran_out,omitempty"`
}

// Objective returns thresholds with DefaultAchieved added when none of
// them is on achieved.
func Objective(ths []threshold.Threshold) []threshold.Threshold {
	for _, t := range ths {
		if t.Metric == threshold.Achieved {
			return ths
		}
	}
	a, err := threshold.Parse(DefaultAchieved)
	if err != nil {
		panic(err) // a constant
	}
	return append(append([]threshold.Threshold(nil), ths...), a)
}

// Find runs the search. An error means it could not proceed (a step's
// setup failed, ctx ended); a step that breaks the objective is a finding.
func Find(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Target == nil && cfg.runStep == nil {
		return nil, errors.New("findmax: no target")
	}
	if len(cfg.Objective) == 0 {
		return nil, errors.New("findmax: no objective")
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = 3
	}
	cfg.Objective = Objective(cfg.Objective)
	if err := cfg.Plan.defaults(); err != nil {
		return nil, err
	}
	maxEd, err := MaxEditors(cfg.Run, cfg.Plan.MaxEditors)
	if err != nil {
		return nil, err
	}
	f := &finder{cfg: cfg, editors: cfg.Run.Editors, maxEditors: maxEd, res: &Result{Version: Version, Plan: cfg.Plan, Start: time.Now(),
		Host: Host{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Go: runtime.Version()}}}
	for _, t := range cfg.Objective {
		f.res.Objective = append(f.res.Objective, t.Expr)
	}
	out, err := Search(ctx, cfg.Plan, f.step)
	f.res.End = time.Now()
	f.res.Outcome = out
	if err != nil {
		return f.res, err
	}
	if len(f.res.Steps) == 0 {
		return nil, errors.New("findmax: no step ran")
	}
	f.res.Run = f.res.Steps[0].Result.Run
	f.res.Run.Rate, f.res.Run.RunID = 0, ""
	f.res.Verdict = verdict(f.res.Steps, out, cfg.Plan, cfg.Run.Editors, f.maxEditors)
	f.res.Verdict.Editors = f.editors
	return f.res, nil
}

// MaxEditors is the most editors a search of run may grow to given limit
// (Plan.MaxEditors): limit, or the run's editors when limit is 0, and no
// more than the workload's windows where it fixes both its pages and its
// windows per page (an editor without a window cannot run). A limit
// below the run's editors is refused.
func MaxEditors(run loadgen.Config, limit int) (int, error) {
	switch {
	case limit == 0:
		return run.Editors, nil
	case limit < 0:
		return 0, errors.New("findmax: the max editors must be positive (or 0: the editors are fixed)")
	case limit < run.Editors:
		return 0, fmt.Errorf("findmax: the max editors (%d) is below the editors (%d)", limit, run.Editors)
	}
	if w := run.Workload; w.Pages > 0 && w.WindowsPerPage > 0 {
		limit = min(limit, w.Pages*w.WindowsPerPage)
	}
	return max(limit, run.Editors), nil
}

type finder struct {
	cfg Config
	res *Result
	// editors is the editors of the next step; maxEditors, the most it
	// may grow to.
	editors, maxEditors int
}

func (f *finder) logf(format string, args ...any) {
	if f.cfg.Logf != nil {
		f.cfg.Logf(format, args...)
	}
}

// step runs one rate (again while the machine stood still during it), and
// again with twice the editors, up to maxEditors and while steps are left,
// while its editors ran out with its latencies held (Generator.Limit
// LimitEditors, on a busy machine too): such a step does not say what the
// server, or the machine, sustains.
func (f *finder) step(ctx context.Context, rate float64, stage string) (bool, int, error) {
	for n := 1; ; n++ {
		st, err := f.attempt(ctx, rate, stage)
		if err != nil {
			return false, n, err
		}
		f.res.Steps = append(f.res.Steps, st)
		if f.cfg.OnStep != nil {
			f.cfg.OnStep(st)
		}
		if st.Pass || st.Generator.Limit != LimitEditors || f.editors >= f.maxEditors || len(f.res.Steps) >= f.cfg.Plan.MaxSteps {
			return st.Pass, n, nil
		}
		next := min(2*f.editors, f.maxEditors)
		f.logf("step %g/s: all %d editors were busy with the latencies held: running it again with %d", rate, f.editors, next)
		f.editors = next
	}
}

// attempt runs one step with the finder's editors, again while the
// machine stood still during it.
func (f *finder) attempt(ctx context.Context, rate float64, stage string) (Step, error) {
	run := f.run
	if f.cfg.runStep != nil {
		run = f.cfg.runStep
	}
	for a := 1; ; a++ {
		st, err := run(ctx, rate, stage, f.editors)
		if err != nil {
			return st, err
		}
		st.Editors = f.editors
		st.Generator.Limit = generatorLimit(st, f.editors)
		if st.PausedSeconds == 0 || a >= f.cfg.Attempts {
			return st, nil
		}
		f.logf("step %g/s: the machine stood still for %.1f s: running it again", rate, st.PausedSeconds)
	}
}

type scrape struct {
	cpu float64
	at  time.Time
	err error
}

func (f *finder) run(ctx context.Context, rate float64, stage string, editors int) (Step, error) {
	cfg := f.cfg.Run
	cfg.Editors = editors
	cfg.Model, cfg.Pacer, cfg.RunID = loadgen.Open, loadgen.Constant(rate), ""
	var s0, s1 sample
	var loaded bool
	srv0 := make(chan scrape, 1)
	var srv1 scrape
	scrapeNow := func() scrape {
		v, at, err := serverCPU(ctx, f.cfg.ServerMetrics)
		return scrape{v, at, err}
	}
	cfg.Phase = func(p string) {
		switch p {
		case "load":
			loaded = true
			s0 = takeSample()
			if f.cfg.ServerMetrics != "" {
				go func() { srv0 <- scrapeNow() }()
			}
		case "converge":
			s1 = takeSample()
			if f.cfg.ServerMetrics != "" {
				srv1 = scrapeNow()
			}
		}
	}
	res, err := loadgen.Run(ctx, f.cfg.Target, cfg)
	if err != nil {
		return Step{}, fmt.Errorf("findmax: step at %g/s: %w", rate, err)
	}
	checks, pass := threshold.Evaluate(f.cfg.Objective, res)
	res.Checks = checks
	st := Step{Rate: rate, Stage: stage, Pass: pass, Checks: checks, Achieved: res.Rate(), Due: res.Counts.Due,
		Committed: res.Counts.Committed, Dropped: res.Counts.Dropped, Errors: res.Counts.Errors,
		CommitP99Ms: p99ms(res, lgmetrics.Commit), FanoutP99Ms: p99ms(res, lgmetrics.Fanout),
		Seconds: res.Seconds(), PausedSeconds: res.PausedSeconds, Result: res}
	for _, c := range checks {
		if !c.Pass {
			st.Broken = fmt.Sprintf("%s (actual %s)", c.Expr, c.Actual)
			break
		}
	}
	for _, iv := range res.Intervals {
		st.PeakInFlight = max(st.PeakInFlight, iv.InFlight)
	}
	secs := s1.at.Sub(s0.at).Seconds()
	if !loaded || secs <= 0 {
		return st, fmt.Errorf("findmax: step at %g/s: no load was measured", rate)
	}
	st.Generator = GeneratorCPU{Cores: (s1.proc - s0.proc).Seconds() / secs, Usable: usableCores(), WaitP99Ms: -1,
		WithServer: f.cfg.Embedded}
	if w := schedQuantile(s0.sched, s1.sched, 0.99); w >= 0 {
		st.Generator.WaitP99Ms = ms(w)
	}
	if f.cfg.ServerMetrics != "" {
		a := <-srv0
		switch {
		case a.err != nil:
			f.logf("server CPU: %v", a.err)
		case srv1.err != nil:
			f.logf("server CPU: %v", srv1.err)
		case srv1.at.After(a.at):
			c := (srv1.cpu - a.cpu) / srv1.at.Sub(a.at).Seconds()
			st.ServerCores = &c
		}
	}
	if s0.machine.ok && s1.machine.ok {
		m := &MachineCPU{Cores: s1.machine.cores, Busy: (s1.machine.busy - s0.machine.busy) / secs,
			Steal: (s1.machine.steal - s0.machine.steal) / secs}
		m.Others = m.Busy - st.Generator.Cores
		if st.ServerCores != nil && isLocal(f.cfg.ServerMetrics) {
			m.Others -= *st.ServerCores
		}
		m.Others = max(0, m.Others)
		st.Machine = m
		st.MachineSaturated = m.Busy >= SaturatedShare*float64(m.Cores)
	}
	return st, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func p99ms(r *lgmetrics.Result, name string) float64 {
	h := r.Hist(name)
	if h.Count() == 0 {
		return -1
	}
	return ms(h.Quantile(99))
}

// isLocal says whether a URL's host is this machine's loopback.
func isLocal(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// generatorLimit says where the generator ran out at st, if it did: its
// editors all busy while operations were dropped, its process's cores all
// used, or its goroutines waiting for a CPU (StarvedWait).
func generatorLimit(st Step, editors int) string {
	g := st.Generator
	switch {
	case g.Cores >= SaturatedShare*g.Usable && g.WithServer:
		return LimitShared
	case g.Cores >= SaturatedShare*g.Usable:
		return LimitGenerator
	case g.WaitP99Ms >= ms(StarvedWait):
		return LimitGenerator
	case st.Dropped > 0 && editors > 0 && st.PeakInFlight >= int64(editors) && onlyThroughputBroken(st):
		return LimitEditors
	}
	return ""
}

// onlyThroughputBroken says the step broke no threshold but the ones on
// throughput (achieved, dropped, rate): its latencies held.
func onlyThroughputBroken(st Step) bool {
	for _, c := range st.Checks {
		if c.Pass {
			continue
		}
		m := c.Expr
		if i := strings.IndexAny(m, "<>=!."); i >= 0 {
			m = m[:i]
		}
		switch strings.TrimSpace(m) {
		case threshold.Achieved, "dropped", "rate", "due", "committed", "commands":
		default:
			return false
		}
	}
	return true
}
