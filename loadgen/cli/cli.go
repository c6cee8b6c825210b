package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/subspace/kbkit/internal/fileout"

	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/internal/cliutil"
	"github.com/subspace/kbkit/loadgen"
	"github.com/subspace/kbkit/loadgen/metrics"
	lgreport "github.com/subspace/kbkit/loadgen/report"
	"github.com/subspace/kbkit/loadgen/threshold"
	"github.com/subspace/kbkit/loadgen/workload"
	"github.com/subspace/kbkit/target"
)

// Exit statuses.
const (
	ExitOK         = 0
	ExitErrored    = 2                  // the run could not proceed, or bad flags
	ExitThresholds = threshold.ExitCode // a threshold is broken (k6's 99)
)

// ExitError carries an exit status out of a command.
type ExitError = cliutil.ExitError

// Run executes `kbkit loadgen ARGS...` and returns its exit status.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := NewCommand()
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(ctx)
	var e ExitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &e):
		return e.Code
	}
	fmt.Fprintln(stderr, "kbkit loadgen:", err)
	return ExitErrored
}

// NewCommand returns the `loadgen` command with its subcommands.
func NewCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "loadgen",
		Short: "Load generator: virtual editors against a server, HDR latency metrics, reports, thresholds",
		Long: `Load generator for servers speaking spec/PROTOCOL.md.

Every virtual editor holds real Windows (kbcore.Window) on its pages, each
with its own WebSocket subscription, so rebase and fan-out cost is real.

  run      generate load (open or closed model) and report its metrics
  report   summarise, merge (shards) and chart saved results
  compare  two saved results side by side: deltas, the better one marked
  find-max the highest open-model rate that meets an objective (thresholds)
  idle     open and hold idle subscribed windows (server memory per window)`,
	}
	cmd.AddCommand(newRunCmd(), newReportCmd(), newCompareCmd(), newFindMaxCmd(), newIdleCmd())
	return cmd
}

type runFlags struct {
	server, dsn         string
	tokens              []string
	instances, devices  int
	workload, mix       string
	pages, perPage      int
	nodes, burst        int
	model               string
	commands            string
	rate, startRate     float64
	stages              []string
	editors             int
	think               time.Duration
	duration, drain     time.Duration
	warmup              time.Duration
	seed                int64
	runID, shard        string
	jsonOut, htmlOut    string
	thresholds          []string
	cpuProfile          string
	quiet, verbose, tty bool
	durationSet         bool
}

// GCPercent is the load generator's GOGC unless $GOGC says otherwise. Its
// live heap is small (documents, windows, histograms) and its garbage is
// per event; at 400 the collector runs a quarter as often as at Go's
// default of 100, and the heap stays within five times the live one.
const GCPercent = 400

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run a load against --server or an embedded reference server",
		Long: `Runs virtual editors against a server for --duration and prints a summary.

Models. Closed (default): --editors editors each send a command, wait for
its answer, think (--think), repeat. Open (--rate N or --stage D:R,...):
operations arrive on schedule whatever the latency; each is measured from
its intended start (no coordinated omission), and one that finds every
editor busy is dropped and counted.

Workloads (--workload): typing (keystroke bursts of edit-text), outline
(create/move/indent/outdent/delete), hot-page (every editor on one page),
many-pages (two windows per page over many pages), rename-storm (renames
rewriting links on other pages). Tune with --mix edit=80,create=10,...,
--pages, --windows-per-page, --nodes, --burst.

Metrics (HDR histograms): commit (POST to response), echo (to the sending
window), fanout (to every other window of the page), convergence (lag at
the end); counts of rejections, retries, refetches, dropped operations,
errors by kind, connects and reconnects.

Thresholds (--threshold, repeatable) such as 'fanout.p99<250ms',
'commit.p99.9<1s', 'errors==0', 'dropped==0', 'rate>=100' make the run
exit 99 when one is broken.

Shards: --shard i/n runs editors e with e mod n == i, and 1/n of the
rate; start every shard with the same flags and --run-id, then merge
their --json files with "kbkit loadgen report".

Without --server the reference server runs in this process on the
PostgreSQL of --dsn, else one from "kbkit pg up"'s providers
(KBKIT_PG_DSN, Docker, local binaries).`,
		Example: `  kbkit loadgen run --workload typing --editors 16 --duration 30s
  kbkit loadgen run --workload hot-page --editors 200 --rate 100 --threshold 'fanout.p99<250ms'
  kbkit loadgen run --workload many-pages --stage 10s:50,20s:200 --editors 64 --json run.json --html run.html
  kbkit loadgen run --server http://10.0.0.5:8080 --token kbk_... --shard 0/2 --run-id bench1 --json s0.json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			f.durationSet = c.Flags().Changed("duration")
			return runLoad(c, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.server, "server", "", "URL of a server speaking spec/PROTOCOL.md (default $KBKIT_URL, else the embedded reference server)")
	fl.StringArrayVar(&f.tokens, "token", nil, "device token for --server (repeat; editors cycle through them; all of one workspace; default $KBKIT_TOKEN)")
	fl.StringVar(&f.dsn, "dsn", "", "embedded server: PostgreSQL database to use (default: a fresh database from the provider)")
	fl.IntVar(&f.instances, "instances", 1, "embedded server: instances sharing the database")
	fl.IntVar(&f.devices, "devices", 0, "embedded server: devices to pair (default one per editor, at most 64)")
	fl.StringVar(&f.workload, "workload", "typing", "typing, outline, hot-page, many-pages or rename-storm")
	fl.StringVar(&f.mix, "mix", "", "override the workload's weights: edit=80,create=10,move=5,indent=2,outdent=2,delete=1,rename=0")
	fl.IntVar(&f.pages, "pages", 0, "pages (default: the workload's)")
	fl.IntVar(&f.perPage, "windows-per-page", 0, "editors that open each page (default: the workload's; hot-page: all)")
	fl.IntVar(&f.nodes, "nodes", 0, "nodes each page starts with (default: the workload's)")
	fl.IntVar(&f.burst, "burst", 0, "keystrokes per typing burst (default: the workload's)")
	fl.StringVar(&f.model, "model", "", "open or closed (default: open with --rate or --stage, else closed)")
	fl.StringVar(&f.commands, "commands", "http", "how editors send commands: http (a POST each) or ws (a mutation on the window's WebSocket)")
	fl.Float64Var(&f.rate, "rate", 0, "open model: operations per second of the whole run")
	fl.StringArrayVar(&f.stages, "stage", nil, "open model: ramp to RATE over DURATION, e.g. 10s:50,20s:200 (repeatable)")
	fl.Float64Var(&f.startRate, "start-rate", 0, "open model: rate the first stage ramps from")
	fl.IntVar(&f.editors, "editors", 8, "virtual editors of the whole run")
	fl.DurationVar(&f.think, "think", 0, "closed model: mean pause between an editor's operations")
	fl.DurationVar(&f.duration, "duration", 30*time.Second, "length of the load (default: the stages' length, else 30s)")
	fl.DurationVar(&f.warmup, "warmup", 0, "run the load this long first, unmeasured (connections, caches, first plans)")
	fl.DurationVar(&f.drain, "drain", 15*time.Second, "after the load, how long to wait for commands in flight and convergence")
	fl.Int64Var(&f.seed, "seed", 1, "seed of the editors' random sources")
	fl.StringVar(&f.runID, "run-id", "", "name of the run, the same on every shard (page ids derive from it)")
	fl.StringVar(&f.shard, "shard", "0/1", "run shard i of n (editors e with e mod n == i)")
	fl.StringVar(&f.jsonOut, "json", "", "write the result (encoded histograms) to this file (- = stdout; the summary then goes to stderr)")
	fl.StringVar(&f.htmlOut, "html", "", "write the HTML report to this file")
	fl.StringArrayVar(&f.thresholds, "threshold", nil, "pass/fail condition, e.g. 'commit.p99<250ms' or 'errors==0' (repeat); exit 99 when broken")
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the load phase (this process: with the embedded server, server and generator)")
	fl.BoolVar(&f.quiet, "quiet", false, "no live console")
	fl.BoolVar(&f.verbose, "verbose", false, "log setup progress on stderr")
	fl.BoolVar(&f.tty, "tty", false, "force the multi-line live console even when stderr is not a terminal")
	return cmd
}

func errored(stderr io.Writer, err error) error {
	fmt.Fprintln(stderr, "kbkit loadgen:", message(err))
	return ExitError{Code: ExitErrored}
}

// message words an error without the package prefixes that would stutter
// after "kbkit loadgen: " ("loadgen: ", "kbkit: cannot run: ").
func message(err error) string {
	msg := err.Error()
	for {
		switch {
		case strings.HasPrefix(msg, "loadgen: "):
			msg = strings.TrimPrefix(msg, "loadgen: ")
		case strings.HasPrefix(msg, target.ErrCannotRun.Error()+": "):
			msg = "could not run: " + strings.TrimPrefix(msg, target.ErrCannotRun.Error()+": ")
		default:
			return msg
		}
	}
}

// buildConfig turns flags into a run configuration.
func buildConfig(f runFlags) (loadgen.Config, error) {
	spec, err := workload.Named(f.workload)
	if err != nil {
		return loadgen.Config{}, err
	}
	if f.mix != "" {
		if err := spec.SetMix(f.mix); err != nil {
			return loadgen.Config{}, err
		}
	}
	if f.pages > 0 {
		spec.Pages = f.pages
	}
	if f.perPage > 0 {
		spec.WindowsPerPage = f.perPage
	}
	if f.nodes > 0 {
		spec.Nodes = f.nodes
	}
	if f.burst > 0 {
		spec.Burst = f.burst
	}
	cfg := loadgen.Config{Workload: spec, Model: f.model, Commands: f.commands, Editors: f.editors, Think: f.think,
		Duration: f.duration, Warmup: f.warmup, Drain: f.drain, Devices: f.devices, Seed: f.seed, RunID: f.runID}
	var stages []loadgen.Stage
	for _, s := range f.stages {
		st, err := loadgen.ParseStages(s)
		if err != nil {
			return cfg, err
		}
		stages = append(stages, st...)
	}
	if cfg.Model == "" {
		cfg.Model = loadgen.Closed
		if f.rate > 0 || len(stages) > 0 {
			cfg.Model = loadgen.Open
		}
	}
	switch {
	case len(stages) > 0:
		if f.rate > 0 {
			return cfg, errors.New("--rate and --stage exclude each other (use --start-rate with stages)")
		}
		cfg.Pacer = loadgen.Pacer{Start: f.startRate, Stages: stages}
		if !f.durationSet {
			cfg.Duration = cfg.Pacer.Duration()
		}
	default:
		cfg.Pacer = loadgen.Constant(f.rate)
	}
	if cfg.Model == loadgen.Closed && (f.rate > 0 || len(stages) > 0) {
		return cfg, errors.New("--rate and --stage belong to the open model")
	}
	if cfg.Model == loadgen.Open && f.think > 0 {
		return cfg, errors.New("--think belongs to the closed model")
	}
	if cfg.Commands != loadgen.CommandsHTTP && cfg.Commands != loadgen.CommandsWS {
		return cfg, fmt.Errorf("--commands %q: http or ws", cfg.Commands)
	}
	if cfg.Shard, err = loadgen.ParseShard(f.shard); err != nil {
		return cfg, err
	}
	if cfg.Shard.N > 1 && cfg.RunID == "" {
		return cfg, errors.New("--shard needs --run-id, the same on every shard")
	}
	return cfg, nil
}

func runLoad(c *cobra.Command, f runFlags) error {
	stdout, stderr := c.OutOrStdout(), c.ErrOrStderr()
	ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ths, err := threshold.ParseAll(f.thresholds)
	if err != nil {
		return errored(stderr, err)
	}
	cfg, err := buildConfig(f)
	if err != nil {
		return errored(stderr, err)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(GCPercent)
	}
	logf := func(format string, args ...any) {}
	if f.verbose {
		logf = func(format string, args ...any) { fmt.Fprintf(stderr, "loadgen: "+format+"\n", args...) }
	}
	cfg.Logf = logf

	tgt, server, stopTarget, err := openTarget(ctx, &f, logf)
	if err != nil {
		return errored(stderr, err)
	}
	defer stopTarget()
	cfg.Server = server

	if f.cpuProfile != "" {
		prof, err := os.Create(f.cpuProfile)
		if err != nil {
			return errored(stderr, err)
		}
		defer prof.Close()
		var once sync.Once
		stopProfile := func() { once.Do(pprof.StopCPUProfile) }
		defer stopProfile()
		cfg.Phase = func(p string) {
			switch p {
			case "load":
				if err := pprof.StartCPUProfile(prof); err != nil {
					logf("cpu profile: %v", err)
				}
			case "converge":
				stopProfile()
			}
		}
	}

	title := fmt.Sprintf("kbkit loadgen %s", cfg.Workload.Name)
	if !f.quiet {
		mode, note := consoleMode(stderr, f.tty, isTerminal(stderr))
		if note != "" {
			fmt.Fprintln(stderr, "kbkit loadgen:", note)
		}
		con := newConsole(stderr, mode, title, cfg.Duration)
		cfg.Status = con.update
		res, err := loadgen.Run(ctx, tgt, cfg)
		con.close()
		return finish(stdout, stderr, res, err, ths, f.jsonOut, f.htmlOut)
	}
	res, err := loadgen.Run(ctx, tgt, cfg)
	return finish(stdout, stderr, res, err, ths, f.jsonOut, f.htmlOut)
}

// openTarget is the server of --server (checked first: a dead server or
// a refused token ends the command at once, not after the setup's
// retries), else the reference server embedded in this process; server
// names it in results.
func openTarget(ctx context.Context, f *runFlags, logf func(string, ...any)) (tgt target.Target, server string, stop func(), err error) {
	f.server, f.tokens = client.ServerFromEnv(f.server, f.tokens)
	if f.server != "" {
		if len(f.tokens) == 0 {
			return nil, "", nil, errors.New("--server needs at least one --token (or $KBKIT_TOKEN)")
		}
		tgt = target.Remote(f.server, f.tokens)
		if err := target.Preflight(ctx, tgt); err != nil {
			return nil, "", nil, err
		}
		return tgt, f.server, func() {}, nil
	}
	e, stopEmbedded, err := loadgen.StartEmbedded(ctx, loadgen.EmbeddedOptions{DSN: f.dsn, Instances: f.instances, Logf: logf})
	if err != nil {
		return nil, "", nil, err
	}
	return e, "embedded", stopEmbedded, nil
}

// finish evaluates thresholds, writes the outputs and picks the exit status.
func finish(stdout, stderr io.Writer, res *metrics.Result, err error, ths []threshold.Threshold, jsonOut, htmlOut string) error {
	if err != nil {
		return errored(stderr, err)
	}
	checks, ok := threshold.Evaluate(ths, res)
	res.Checks = checks
	text := stdout
	if jsonOut == "-" { // the JSON takes stdout; the summary goes to stderr
		text = stderr
	}
	if err := lgreport.Text(text, res); err != nil {
		return errored(stderr, err)
	}
	switch jsonOut {
	case "":
	case "-":
		if err := res.Write(stdout); err != nil {
			return errored(stderr, err)
		}
	default:
		if err := res.WriteFile(jsonOut); err != nil {
			return errored(stderr, err)
		}
		fmt.Fprintf(stderr, "kbkit loadgen: wrote %s\n", jsonOut)
	}
	if htmlOut != "" {
		if err := writeHTML(htmlOut, res); err != nil {
			return errored(stderr, err)
		}
		fmt.Fprintf(stderr, "kbkit loadgen: wrote %s\n", htmlOut)
	}
	if !ok {
		fmt.Fprintln(stderr, "kbkit loadgen: thresholds broken")
		return ExitError{Code: ExitThresholds}
	}
	return nil
}

func writeHTML(path string, res *metrics.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := lgreport.HTML(f, res); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func newReportCmd() *cobra.Command {
	var htmlOut, jsonOut string
	var ths []string
	cmd := &cobra.Command{
		Use:   "report FILE...",
		Short: "Summarise saved results; several files (the shards of a run) merge exactly",
		Long: `Reads the --json files of one run (one per shard), merges them (histograms
and counts add exactly; intervals align on wall-clock seconds), prints the
summary, and writes a self-contained HTML page (--html: the summary, a table
by operation type, latency percentiles, throughput, errors and recovery and
work in flight over time, latency distributions; hover values, partial
seconds shaded) or the merged JSON (--json). --threshold works as for run (exit 99).`,
		Example: `  kbkit loadgen report run.json --html run.html
  kbkit loadgen report shard0.json shard1.json --json merged.json --threshold 'errors==0'`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			stderr := c.ErrOrStderr()
			t, err := threshold.ParseAll(ths)
			if err != nil {
				return errored(stderr, err)
			}
			var rs []*metrics.Result
			for _, a := range args {
				r, err := metrics.ReadFile(a)
				if err != nil {
					return errored(stderr, err)
				}
				rs = append(rs, r)
			}
			res, err := metrics.Merge(rs...)
			if err != nil {
				return errored(stderr, err)
			}
			if len(t) == 0 {
				t, _ = threshold.ParseAll(exprs(res.Checks)) // keep the run's own thresholds
			}
			return finish(c.OutOrStdout(), stderr, res, nil, t, jsonOut, htmlOut)
		},
	}
	cmd.Flags().StringVar(&htmlOut, "html", "", "write the HTML report to this file")
	cmd.Flags().StringVar(&jsonOut, "json", "", "write the merged result to this file (- = stdout; the summary then goes to stderr)")
	cmd.Flags().StringArrayVar(&ths, "threshold", nil, "pass/fail condition (repeat); default: the thresholds of the first run")
	return cmd
}

func newCompareCmd() *cobra.Command {
	var htmlOut string
	cmd := &cobra.Command{
		Use:   "compare A.json B.json",
		Short: "Compare two saved results: every figure side by side, B - A, the better one marked",
		Long: `Reads two --json results (e.g. before and after a change) and prints every
figure of A beside B's: rate, counts, errors, drops, retries, reconnects,
refetches, cpu per command, p50/p90/p99/p99.9/max of each latency and each
command type's commit latency, with B - A and which run is better ("=" equal,
"≈" within 1%; no mark where neither direction is better, "n/a" where a run
cannot say). --html writes a self-contained page with the same table, the
percentile spectra of both runs overlaid and their time series side by side.`,
		Example: `  kbkit loadgen compare before.json after.json --html compare.html`,
		Args:    cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			stderr := c.ErrOrStderr()
			a, err := metrics.ReadFile(args[0])
			if err != nil {
				return errored(stderr, err)
			}
			b, err := metrics.ReadFile(args[1])
			if err != nil {
				return errored(stderr, err)
			}
			if htmlOut != "" {
				if err := fileout.Write(htmlOut, func(w io.Writer) error { return lgreport.CompareHTML(w, args[0], a, args[1], b) }); err != nil {
					return errored(stderr, err)
				}
			}
			if err := lgreport.CompareText(c.OutOrStdout(), args[0], a, args[1], b); err != nil {
				return errored(stderr, err)
			}
			if d := lgreport.ShapeDiff(a, b); len(d) > 0 {
				fmt.Fprintf(stderr, "kbkit loadgen compare: warning: the runs differ in shape: %s\n", strings.Join(d, ", "))
			}
			if htmlOut != "" {
				fmt.Fprintf(stderr, "kbkit loadgen compare: wrote %s\n", htmlOut)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&htmlOut, "html", "", "write the comparison as an HTML page to this file")
	return cmd
}

func exprs(cs []metrics.Check) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Expr)
	}
	return out
}

func newIdleCmd() *cobra.Command {
	var server, token, page string
	var windows, conc int
	var hold time.Duration
	cmd := &cobra.Command{
		Use:   "idle",
		Short: "Open idle subscribed windows on one page and hold them (server memory per window)",
		Long: `Opens --windows windows on one page of --server (a new page unless --page),
each a Window with its own WebSocket and kb.onPage subscription, waits until
every subscription is live (it has delivered the page's last command), prints
one JSON line on stdout, and holds them until SIGINT/SIGTERM or --hold.

scripts/bench-server.sh reads the server's VmRSS before and after to get
the memory per idle subscribed window. Raise "ulimit -n" for many windows.`,
		Example: `  kbkit loadgen idle --server http://127.0.0.1:8080 --token kbk_... --windows 5000`,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			stderr := c.ErrOrStderr()
			var tokens []string
			if token != "" {
				tokens = []string{token}
			}
			if server, tokens = client.ServerFromEnv(server, tokens); server == "" || len(tokens) == 0 {
				return errored(stderr, errors.New("idle needs --server and --token (or $KBKIT_URL and $KBKIT_TOKEN)"))
			}
			token = tokens[0]
			ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			iw, rep, err := loadgen.OpenIdle(ctx, target.Remote(server, []string{token}),
				loadgen.IdleConfig{Windows: windows, Page: page, Concurrency: conc})
			if iw != nil {
				defer iw.Close()
			}
			if err != nil {
				return errored(stderr, err)
			}
			line, _ := json.Marshal(rep)
			fmt.Fprintln(c.OutOrStdout(), string(line))
			if hold > 0 {
				select {
				case <-time.After(hold):
				case <-ctx.Done():
				}
			} else {
				<-ctx.Done()
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&server, "server", "", "URL of the server (default $KBKIT_URL)")
	fl.StringVar(&token, "token", "", "device token (default $KBKIT_TOKEN)")
	fl.StringVar(&page, "page", "", "page id to open (default: create a page)")
	fl.IntVar(&windows, "windows", 1000, "windows to open")
	fl.IntVar(&conc, "concurrency", 64, "windows opened at once")
	fl.DurationVar(&hold, "hold", 0, "hold the windows this long (default: until SIGINT or SIGTERM)")
	return cmd
}
