package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/internal/fileout"
	"github.com/subspace/kbkit/loadgen/findmax"
	"github.com/subspace/kbkit/loadgen/threshold"
)

// DefaultMaxEditors is find-max's --max-editors: 0, the editors stay
// --editors. Growing them is asked for: on hot-page each editor is one
// more window on the one page, so more editors change the load itself
// (every commit fans out to each), and the generator may run out first.
const DefaultMaxEditors = 0

type findFlags struct {
	run                 runFlags
	startRate, maxRate  float64
	resolution          float64
	maxSteps            int
	maxEditors          int
	step                time.Duration
	serverMetrics       string
	jsonOut, htmlOut    string
	dir                 string
	quiet               bool
	warmupSet, drainSet bool
}

func newFindMaxCmd() *cobra.Command {
	var f findFlags
	cmd := &cobra.Command{
		Use:   "find-max",
		Short: "Find the highest open-model rate that meets an objective (thresholds), and what ran out above it",
		Long: `Runs open-model steps of --step each against a server: from --start-rate it
doubles the rate while steps meet the objective (halves it while they do
not), then bisects between the highest passing rate and the lowest failing
one until they are within --resolution of each other. It reports the
sustainable rate, the step above it that broke the objective and the first
threshold it broke, and the step table.

The objective is --threshold, as for run ('commit.p99<50ms',
'fanout.p99<250ms', 'errors==0'; default commit.p99<100ms and errors==0),
and achieved>=0.9 (committed over due: a step whose server fell behind its
schedule did not sustain its rate) unless a threshold on achieved is given.

Each step also measures the generator itself: its process's CPU beside
the cores it can use, the 99th percentile of its goroutines' wait for a
CPU, the server's CPU (process_cpu_seconds_total of --server's /metrics)
and the machine's (Linux /proc/stat: the cores busy, and those of other
processes). At the step that broke the objective the verdict names what
ran out, the generator first: "generator" (it used its cores, or its
goroutines waited for one), "machine" (every core busy, other processes
among them), "generator+server" (the embedded server shares the
generator's process: use --server to tell them apart), "editors" (every
editor busy, operations dropped while latencies held) or "server".

Each editor takes one operation at a time, so a rate needs rate × latency
editors. A step whose editors were all busy, with operations dropped while
its latencies held, does not say what the server sustains: with
--max-editors above --editors it runs again, at the same rate, with twice
the editors (up to --max-editors; by default 0, --editors fixed), and
later steps keep them.
Editors join as the workload lays them out: on hot-page each is one more
window on the one page (every commit fans out to every window); typing,
outline and rename-storm add pages of two windows; many-pages fills its
100 pages × 2 windows, and no workload grows past its windows. Only a
step that ran out at --max-editors is read as "editors". Anything but
"server" makes the sustainable rate a lower bound of the server's.

Exit status: 0 when a rate met the objective, 99 when none did, 2 when
the search could not run. A step during which the machine stood still
(a virtual machine paused) runs again.`,
		Example: `  kbkit loadgen find-max --workload hot-page --threshold 'commit.p99<50ms'
  kbkit loadgen find-max --server http://127.0.0.1:8080 --token kbk_... --workload many-pages \
      --threshold 'commit.p99<50ms' --threshold 'fanout.p99<250ms' --json max.json --html max.html`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			f.warmupSet = c.Flags().Changed("warmup")
			return findMax(c, f)
		},
	}
	fl := cmd.Flags()
	r := &f.run
	fl.StringVar(&r.server, "server", "", "URL of a server speaking spec/PROTOCOL.md (default $KBKIT_URL, else the embedded reference server)")
	fl.StringArrayVar(&r.tokens, "token", nil, "device token for --server (repeat; default $KBKIT_TOKEN)")
	fl.StringVar(&f.serverMetrics, "server-metrics", "", "the server's Prometheus page for its CPU (default: --server's /metrics; none: do not read it)")
	fl.StringVar(&r.dsn, "dsn", "", "embedded server: PostgreSQL database to use (default: a fresh database from the provider)")
	fl.IntVar(&r.instances, "instances", 1, "embedded server: instances sharing the database")
	fl.StringVar(&r.workload, "workload", "hot-page", "typing, outline, hot-page, many-pages or rename-storm")
	fl.StringVar(&r.mix, "mix", "", "override the workload's weights: edit=80,create=10,...")
	fl.IntVar(&r.pages, "pages", 0, "pages (default: the workload's)")
	fl.IntVar(&r.perPage, "windows-per-page", 0, "editors that open each page (default: the workload's; hot-page: all)")
	fl.IntVar(&r.nodes, "nodes", 0, "nodes each page starts with (default: the workload's)")
	fl.StringVar(&r.commands, "commands", "http", "how editors send commands: http or ws")
	fl.IntVar(&r.editors, "editors", 32, "virtual editors to start with (each takes one operation at a time: in flight = rate × latency must fit)")
	fl.IntVar(&f.maxEditors, "max-editors", DefaultMaxEditors, "double the editors of a step that ran out of them, with its latencies held, up to this many (0: --editors, fixed)")
	fl.StringArrayVar(&r.thresholds, "threshold", nil, "objective, as run's --threshold (repeat; default commit.p99<100ms and errors==0)")
	fl.Float64Var(&f.startRate, "start-rate", 50, "the first step's rate (operations/s)")
	fl.Float64Var(&f.maxRate, "max-rate", 0, "stop doubling at this rate (0: no cap)")
	fl.Float64Var(&f.resolution, "resolution", 0.1, "bisect until the failing rate is within this fraction above the passing one")
	fl.IntVar(&f.maxSteps, "max-steps", 12, "the most steps to run")
	fl.DurationVar(&f.step, "step", 5*time.Second, "each step's measured load")
	fl.DurationVar(&r.warmup, "warmup", time.Second, "each step's unmeasured warm-up at its rate")
	fl.DurationVar(&r.drain, "drain", 10*time.Second, "after each step, how long to wait for commands in flight and convergence")
	fl.Int64Var(&r.seed, "seed", 1, "seed of the editors' random sources")
	fl.StringVar(&f.jsonOut, "json", "", "write the search (every step's figures and the verdict) to this file")
	fl.StringVar(&f.htmlOut, "html", "", "write the search as an HTML page to this file")
	fl.StringVar(&f.dir, "dir", "", "write each step's full result (as run --json) into this directory")
	fl.BoolVar(&f.quiet, "quiet", false, "no line per step on stderr")
	fl.BoolVar(&r.verbose, "verbose", false, "log progress on stderr")
	return cmd
}

func findMax(c *cobra.Command, f findFlags) error {
	stdout, stderr := c.OutOrStdout(), c.ErrOrStderr()
	ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	exprs := f.run.thresholds
	if len(exprs) == 0 {
		exprs = findmax.DefaultObjective
	}
	ths, err := threshold.ParseAll(exprs)
	if err != nil {
		return errored(stderr, err)
	}
	if f.step <= 0 {
		return errored(stderr, errors.New("--step must be positive"))
	}
	f.run.rate, f.run.duration, f.run.durationSet, f.run.shard = f.startRate, f.step, true, "0/1"
	if f.startRate <= 0 {
		return errored(stderr, errors.New("--start-rate must be positive"))
	}
	cfg, err := buildConfig(f.run)
	if err != nil {
		return errored(stderr, err)
	}
	if f.maxEditors < 0 {
		return errored(stderr, errors.New("--max-editors must be positive (or 0: --editors, fixed)"))
	}
	plan := findmax.Plan{StartRate: f.startRate, MaxRate: f.maxRate, Resolution: f.resolution, MaxSteps: f.maxSteps, MaxEditors: f.maxEditors}
	if err := plan.Check(); err != nil { // before any server starts
		return errored(stderr, err)
	}
	if _, err := findmax.MaxEditors(cfg, plan.MaxEditors); err != nil {
		return errored(stderr, errors.New(strings.Replace(strings.TrimPrefix(err.Error(), "findmax: "), "the max editors", "--max-editors", 1)))
	}
	if f.dir != "" {
		if err := os.MkdirAll(f.dir, 0o755); err != nil {
			return errored(stderr, err)
		}
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(GCPercent)
	}
	logf := func(string, ...any) {}
	if f.run.verbose {
		logf = func(format string, args ...any) { fmt.Fprintf(stderr, "loadgen: "+format+"\n", args...) }
	}
	cfg.Logf = logf
	tgt, server, stopTarget, err := openTarget(ctx, &f.run, logf)
	if err != nil {
		return errored(stderr, err)
	}
	defer stopTarget()
	cfg.Server = server
	fc := findmax.Config{Run: cfg, Plan: plan, Objective: ths, Target: tgt, Embedded: server == "embedded", Logf: logf}
	if server != "embedded" && f.serverMetrics != "none" {
		fc.ServerMetrics = f.serverMetrics
		if fc.ServerMetrics == "" {
			fc.ServerMetrics = strings.TrimRight(server, "/") + "/metrics"
		}
	}
	n := 0
	fc.OnStep = func(s findmax.Step) {
		n++
		if !f.quiet {
			fmt.Fprintln(stderr, stepLine(n, s))
		}
		if f.dir != "" {
			p := filepath.Join(f.dir, fmt.Sprintf("step-%02d-%g.json", n, s.Rate))
			if err := s.Result.WriteFile(p); err != nil {
				fmt.Fprintf(stderr, "kbkit loadgen find-max: %v\n", err)
			}
		}
	}
	if !f.quiet {
		fmt.Fprintf(stderr, "kbkit loadgen find-max: %s, steps of %s from %g/s; objective %s\n", cfg.Workload.Name, f.step, f.startRate,
			strings.Join(objectiveExprs(findmax.Objective(ths)), ", "))
	}
	res, err := findmax.Find(ctx, fc)
	if err != nil {
		return errored(stderr, err)
	}
	return writeFindMax(stdout, stderr, res, f)
}

func objectiveExprs(ths []threshold.Threshold) []string {
	var out []string
	for _, t := range ths {
		out = append(out, t.Expr)
	}
	return out
}

// stepLine is a step as it ends, for stderr.
func stepLine(n int, s findmax.Step) string {
	res := "ok"
	if !s.Pass {
		res = "FAIL " + s.Broken
	}
	gen := fmt.Sprintf("generator %.2f/%g cores", s.Generator.Cores, s.Generator.Usable)
	if s.Generator.WaitP99Ms >= 0 {
		gen += fmt.Sprintf(", CPU wait p99 %.2fms", s.Generator.WaitP99Ms)
	}
	if s.Generator.Limit != "" {
		gen += " (" + s.Generator.Limit + " ran out)"
	}
	return fmt.Sprintf("  step %d %-6s %7g/s, %d editors: achieved %.1f/s, commit p99 %.2fms, %s: %s", n, s.Stage, s.Rate, s.Editors, s.Achieved, s.CommitP99Ms, gen, res)
}

func writeFindMax(stdout, stderr io.Writer, res *findmax.Result, f findFlags) error {
	if err := findmax.Text(stdout, res); err != nil {
		return errored(stderr, err)
	}
	if f.jsonOut != "" {
		if err := res.WriteFile(f.jsonOut); err != nil {
			return errored(stderr, err)
		}
		fmt.Fprintf(stderr, "kbkit loadgen find-max: wrote %s\n", f.jsonOut)
	}
	if f.htmlOut != "" {
		if err := fileout.Write(f.htmlOut, func(w io.Writer) error { return findmax.HTML(w, res) }); err != nil {
			return errored(stderr, err)
		}
		fmt.Fprintf(stderr, "kbkit loadgen find-max: wrote %s\n", f.htmlOut)
	}
	if res.Verdict.Sustainable == 0 {
		fmt.Fprintln(stderr, "kbkit loadgen find-max: no rate met the objective")
		return ExitError{Code: ExitThresholds}
	}
	return nil
}
