package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/subspace/kbkit/internal/cliutil"
	"github.com/subspace/kbkit/sim/broken"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/sim"
	"github.com/subspace/kbkit/speckit/report"
)

func newConformanceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "conformance",
		Short: "Multi-client convergence suite and protocol checks against a server",
	}
	cmd.AddCommand(newConformanceRunCmd())
	cmd.AddCommand(newConformanceProtocolCmd())
	return cmd
}

type conformanceFlags struct {
	seeds, windows, pages, steps, devices, instances int
	parallel                                         int
	seed                                             int64
	seedSet                                          bool
	faults, trace, bursts, strict, htmlAll           bool
	server, topology, htmlDir, broken                string
	restartCmd, pgRestartCmd                         string
	tokens, clients                                  []string
	junit, jsonOut, outDir                           string
	echoTimeout, seedTimeout                         time.Duration
	shrinkFlags
}

func newConformanceRunCmd() *cobra.Command {
	var f conformanceFlags
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the simulator: windows edit pages through the wire protocol, with faults, then checkers",
		Long: `Runs N windows on several devices over M pages against a server, with
faults drawn per seed, then checks convergence, the projection, gapless seqs,
exactly-once, rollback of rejections, refetch after gaps and per-page
linearizability (Porcupine).

Without --server it runs an in-process reference server (two instances) on
the embedded Postgres (KBKIT_PG_DSN, Docker or local binaries; see
kbkit pg up). With --server URL (or $KBKIT_URL) it needs one --token per device (all of
one workspace; $KBKIT_TOKEN is one). A dead server or a refused token ends
the run within seconds with exit status 2.

Seeds run from --seed (default 0) to --seed + --seeds - 1, the same
numbering as sim.Options. Off a terminal, a progress line goes to
stderr every few seconds.

--seed S replays one seed exactly. Every failing seed is printed with the
complete command that replays it (text, JSON "replay", JUnit, timeline),
tokens as placeholders ($KBKIT_TOKEN; several: $KBKIT_TOKEN_1, ...).

The first failing seed is shrunk (--shrink, on unless --choices is given;
--shrink=false: off): its history (steps, windows, pages, devices, faults,
the scheduler's choices) is reduced to a small one that still fails the
same checker, within --shrink-budget, each candidate run up to
--shrink-runs times. It prints the before/after counts and the command
that replays the shrunk history (--choices FILE, written beside the
timelines in --html DIR, else in --out DIR), and with --html its timeline
(seed-N-choices.html).

--client "CMD ARGS" (repeatable) drives another team's client through the
client suite of the adapter protocol (spec/ADAPTER.md section 7): one
window of it per seed, beside --windows of the kit's own (0 by default
with --client), on the same pages. The client does its own networking,
to a fault proxy of the kit in front of the server; every checker runs
on the merged history, and the report lists the intents and faults each
client saw:

  kbkit conformance run --client "node examples/client-js/adapter.mjs" --seeds 100 --faults
  kbkit conformance run --windows 2 --client "node a.mjs" --client "node b.mjs" --faults

--html DIR writes a timeline of every failing seed (seed-N.html, one
self-contained page each; --html-all: of every seed): a lane per window,
server instance and page log, every command as a span from its first POST
to its decision, echoes, refetches, undo/redo links and injected faults
where they happened, each finding linked to its events, and the final
documents of the windows beside the fold of the log.

The run never hangs: a window that gets no echo it is owed within
--echo-timeout is a protocol finding (then it refetches), and each seed
ends within --seed-timeout, checks included (a seed that hits it fails).
Either stops the run: no further seed starts, so against a server that
stops answering or echoing the run ends within 2 x --seed-timeout
(4 minutes by default), and a shrink within --shrink-budget after that.

A checker that no seed gave anything to check (e.g. dedup without lost
responses, refetch without dropped echoes) is named on stderr as skipped;
with --strict a skipped checker fails the run (exit 1).

Exit status: 0 every checker passed, 1 a checker failed (or, with
--strict, was skipped), 2 the run could not proceed.`,
		RunE: func(c *cobra.Command, args []string) error {
			f.seedSet = c.Flags().Changed("seed")
			f.shrinkSet = c.Flags().Changed("shrink")
			return runConformance(c, f)
		},
	}
	addConformanceRunFlags(cmd.Flags(), &f)
	return cmd
}

// addConformanceRunFlags defines conformance run's flags on fl (the
// replay test parses a printed replay line with them).
func addConformanceRunFlags(fl *pflag.FlagSet, f *conformanceFlags) {
	fl.IntVar(&f.seeds, "seeds", 10, "number of seeds to run: --seed, --seed+1, ...")
	fl.Int64Var(&f.seed, "seed", 0, "the first seed; alone (without --seeds) it replays exactly this seed")
	fl.IntVar(&f.windows, "windows", 4, "windows per seed")
	fl.IntVar(&f.pages, "pages", 3, "pages per seed")
	fl.IntVar(&f.steps, "steps", 100, "scheduler steps per seed")
	fl.IntVar(&f.devices, "devices", 2, "devices per seed")
	fl.IntVar(&f.parallel, "parallel", 4, "seeds run at once (each seed alone is sequential and replays)")
	fl.IntVar(&f.instances, "instances", 2, "embedded server instances sharing the database")
	fl.BoolVar(&f.faults, "faults", false, "inject faults (drawn per seed)")
	fl.BoolVar(&f.trace, "trace", false, "print every scheduler event on stderr as it happens")
	fl.BoolVar(&f.bursts, "bursts", false, "also post several windows' commands at once (exercises group commit; such seeds do not replay exactly)")
	fl.StringVar(&f.topology, "topology", "", "embedded Postgres: single, sync-standby or async-standby (default $"+pgprovider.EnvTopology+" or single); with a standby, every seed with --faults fails over once at mid-seed")
	fl.StringVar(&f.server, "server", "", "URL of a server speaking spec/PROTOCOL.md (default $KBKIT_URL, else the embedded reference server)")
	fl.StringArrayVar(&f.clients, "client", nil, "a client adapter's command line (spec/ADAPTER.md section 7; repeat for more): each opens one window per seed, with its own networking, through a fault proxy; without --windows, the kit opens no windows of its own")
	fl.StringArrayVar(&f.tokens, "token", nil, "device token for --server (repeat: one device per token; default $KBKIT_TOKEN)")
	fl.StringVar(&f.restartCmd, "restart-command", "", "with --server: shell command that kills and restarts the server instance ($KBKIT_INSTANCE_URL); lets --faults draw instance restarts")
	fl.StringVar(&f.pgRestartCmd, "postgres-restart-command", "", "with --server: shell command that restarts the server's Postgres; lets --faults draw Postgres restarts")
	fl.StringVar(&f.junit, "junit", "", "write a JUnit XML report to this file")
	fl.StringVar(&f.jsonOut, "json", "", "write one JSON line per seed to this file (- = stdout; the table then goes to stderr)")
	fl.StringVar(&f.outDir, "out", "", "directory for Porcupine visualisations of failures (default: the --html directory, else that of --junit or --json, else the current one)")
	fl.DurationVar(&f.echoTimeout, "echo-timeout", 10*time.Second, "how long to wait for an echo the server owes")
	fl.DurationVar(&f.seedTimeout, "seed-timeout", sim.DefaultSeedTimeout, "deadline of one seed, checks included")
	fl.BoolVar(&f.strict, "strict", false, "a checker skipped by every seed fails the run (exit 1)")
	fl.StringVar(&f.htmlDir, "html", "", "write a timeline page (seed-N.html) of every failing seed to this directory")
	fl.BoolVar(&f.htmlAll, "html-all", false, "with --html: a timeline of every seed, passing ones too")
	fl.StringVar(&f.broken, "broken-server", "", "put the target behind a proxy that breaks one guarantee ("+strings.Join(broken.Variants(), ", ")+"): to see the checkers and the timeline catch a bug")
	_ = fl.MarkHidden("broken-server")
	addShrinkFlags(fl, &f.shrinkFlags)
}

// options are the run's sim.Options as the flags give them
// (f.seeds as runConformance settles it; no Logf or Progress).
func (f conformanceFlags) options() sim.Options {
	return sim.Options{
		Seed: f.seed, Seeds: f.seeds, Windows: f.windows, Pages: f.pages, Devices: f.devices,
		Clients: f.clients, Parallel: f.parallel,
		Steps: f.steps, Faults: f.faults, OutDir: f.outDir, HTMLDir: f.htmlDir, HTMLAll: f.htmlAll, EchoTimeout: f.echoTimeout, SeedTimeout: f.seedTimeout, Trace: f.trace, Bursts: f.bursts,
		Choices: f.choices, ChoicesFile: f.choicesFile,
		Where: sim.Where{Server: f.server, Tokens: len(f.tokens), Instances: f.instances, Topology: f.topology, Broken: f.broken,
			RestartCommand: f.restartCmd, PostgresRestartCommand: f.pgRestartCmd},
	}
}

func runConformance(c *cobra.Command, f conformanceFlags) error {
	ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stderr := c.ErrOrStderr()
	if f.seedSet && !c.Flags().Changed("seeds") {
		f.seeds = 1
	}
	if len(f.clients) > 0 && !c.Flags().Changed("windows") {
		f.windows = 0
	}
	for _, line := range f.clients {
		if strings.TrimSpace(line) == "" {
			fmt.Fprintln(stderr, "kbkit conformance run: --client needs a command line")
			return exitError{Code: exitErrored}
		}
	}
	f.server, f.tokens = client.ServerFromEnv(f.server, f.tokens)
	if f.htmlAll && f.htmlDir == "" {
		fmt.Fprintln(stderr, "kbkit conformance run: --html-all needs --html DIR")
		return exitError{Code: exitErrored}
	}
	if err := f.readChoices(); err != nil {
		fmt.Fprintln(stderr, "kbkit conformance run:", err)
		return exitError{Code: exitErrored}
	}
	if f.htmlDir != "" {
		if err := os.MkdirAll(f.htmlDir, 0o755); err != nil {
			fmt.Fprintln(stderr, "kbkit conformance run: --html:", err)
			return exitError{Code: exitErrored}
		}
	}
	f.outDir = porcupineDir(f)
	if f.server == "" && (f.restartCmd != "" || f.pgRestartCmd != "") {
		fmt.Fprintln(stderr, "kbkit conformance run: --restart-command and --postgres-restart-command need --server (the embedded server restarts itself)")
		return exitError{Code: exitErrored}
	}
	var target sim.Target
	if f.server != "" {
		target = sim.RemoteWith(f.server, f.tokens, sim.RemoteCommands{RestartInstance: f.restartCmd, RestartPostgres: f.pgRestartCmd})
	} else {
		popts := pgprovider.OptionsFromEnv()
		if f.topology != "" {
			popts.Topology = pgprovider.Topology(f.topology)
		}
		f.topology = string(popts.Topology) // $KBKIT_PG_TOPOLOGY too, for the replay line
		pg, err := pgprovider.Start(ctx, popts)
		if err != nil {
			fmt.Fprintln(stderr, "kbkit conformance run:", err)
			return exitError{Code: exitErrored}
		}
		defer pg.Stop(context.WithoutCancel(ctx))
		dsn, drop, err := pg.NewDatabase(ctx, "")
		if err != nil {
			fmt.Fprintln(stderr, "kbkit conformance run:", err)
			return exitError{Code: exitErrored}
		}
		defer drop(context.WithoutCancel(ctx)) // leave a borrowed server as it was
		var restartable *pgprovider.Server
		if pg.Kind() != pgprovider.KindDSN { // a server we did not start is not ours to restart
			restartable = pg
		}
		e, err := sim.NewEmbedded(ctx, dsn, sim.EmbeddedOptions{Instances: f.instances, Postgres: restartable})
		if err != nil {
			fmt.Fprintln(stderr, "kbkit conformance run:", err)
			return exitError{Code: exitErrored}
		}
		defer e.Close()
		target = e
	}
	var fresh func() (sim.Target, func(), error) // a shrink's target per run (nil: target)
	if f.broken != "" {
		base := target
		fresh = func() (sim.Target, func(), error) { return broken.New(base, f.broken) }
		b, stopProxy, err := broken.New(target, f.broken)
		if err != nil {
			fmt.Fprintln(stderr, "kbkit conformance run:", err)
			return exitError{Code: exitErrored}
		}
		defer stopProxy()
		target = b
	}
	tty := report.IsTerminal(stderr)
	start := time.Now()
	progress := newSeedProgress(stderr, tty, f.seeds, start)
	opts := f.options()
	opts.Logf = func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }
	opts.Progress = progress.seed
	stopTicker := progress.tick()
	reports, err := sim.RunSeeds(ctx, target, opts)
	stopTicker()
	progress.clear()
	if err != nil && len(reports) == 0 { // nothing ran: no table of zeros
		fmt.Fprintln(stderr, "kbkit conformance run:", cliutil.CannotRun(err))
		return exitError{Code: exitErrored}
	}
	out := c.OutOrStdout()
	table := out
	if f.jsonOut == "-" {
		table = stderr
	}
	summarize(table, reports, time.Since(start))
	if note := htmlNote(f, reports); note != "" {
		fmt.Fprintln(stderr, "kbkit conformance run:", note)
	}
	for _, cov := range sim.Coverage(reports) {
		fmt.Fprintf(table, "client %q: %s\n", cov.Client, cov)
	}
	for _, r := range reports {
		if r.Err != "" {
			fmt.Fprintf(stderr, "kbkit conformance run: seed %d could not run: %s\n", r.Seed, cliutil.CannotRun(errors.New(r.Err)))
		}
	}
	if err == nil {
		shrinkFirstFailure(ctx, table, stderr, target, fresh, opts, f.shrinkFlags, reports)
	}
	if f.jsonOut != "" {
		if err := writeSeedJSON(f.jsonOut, out, reports); err != nil {
			fmt.Fprintln(stderr, "kbkit conformance run: --json:", err)
			return exitError{Code: exitErrored}
		}
	}
	if f.junit != "" {
		if err := writeSeedJUnit(f.junit, reports); err != nil {
			fmt.Fprintln(stderr, "kbkit conformance run: --junit:", err)
			return exitError{Code: exitErrored}
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "kbkit conformance run:", cliutil.CannotRun(err))
		return exitError{Code: exitErrored}
	}
	failed, errored := false, false
	for _, r := range reports {
		if r.Err != "" {
			errored = true
		}
		if r.Failed() {
			failed = true
		}
		if r.Halt != "" {
			fmt.Fprintf(stderr, "kbkit conformance run: stopped after %s\n", r.Halt)
		}
	}
	if skipped := sim.Skipped(reports); len(skipped) > 0 {
		fmt.Fprintf(stderr, "kbkit conformance run: skipped (no seed gave them anything to check): %s\n", strings.Join(skipped, ", "))
		if f.strict {
			failed = true
		}
	}
	switch {
	case failed:
		return exitError{Code: exitFailed}
	case errored:
		return exitError{Code: exitErrored}
	}
	return nil
}

// porcupineDir is where Porcupine's pages go: --out, else beside the
// run's other outputs.
func porcupineDir(f conformanceFlags) string {
	switch {
	case f.outDir != "":
		return f.outDir
	case f.htmlDir != "":
		return f.htmlDir
	case f.junit != "":
		return filepath.Dir(f.junit)
	case f.jsonOut != "" && f.jsonOut != "-":
		return filepath.Dir(f.jsonOut)
	}
	return "."
}

// htmlNote says what --html wrote when it wrote nothing: an empty
// directory without a word looks like a broken flag.
func htmlNote(f conformanceFlags, reports []sim.SeedReport) string {
	if f.htmlDir == "" {
		return ""
	}
	if f.htmlAll || len(reports) == 0 {
		return ""
	}
	for _, r := range reports {
		if r.Timeline != "" || r.Failed() || r.Err != "" {
			return ""
		}
	}
	return fmt.Sprintf("--html %s: every seed passed, so no timeline was written (--html-all writes one of every seed)", f.htmlDir)
}

// summarize prints a table per checker, then every failure with its seed.
func summarize(w io.Writer, reports []sim.SeedReport, took time.Duration) {
	passed, skipped := map[string]int{}, map[string]int{}
	failed := map[string][]int64{}
	var commands, committed, rejected, refetches, gaps int
	for _, r := range reports {
		for _, c := range r.Checks {
			switch {
			case c.Passed && c.Skipped: // vacuous: nothing to check is not a pass
				skipped[c.Name]++
			case c.Passed:
				passed[c.Name]++
			default:
				failed[c.Name] = append(failed[c.Name], r.Seed)
			}
		}
		commands += r.Stats.Commands
		committed += r.Stats.Committed
		rejected += r.Stats.Rejected
		refetches += r.Stats.Refetches
		gaps += r.Stats.Gaps
	}
	fmt.Fprintf(w, "%-16s %6s %7s %6s  %s\n", "checker", "passed", "skipped", "failed", "failing seeds")
	for _, name := range sim.Checkers {
		seeds := make([]string, 0, len(failed[name]))
		for _, s := range failed[name] {
			seeds = append(seeds, fmt.Sprint(s))
		}
		fmt.Fprintf(w, "%-16s %6d %7d %6d  %s\n", name, passed[name], skipped[name], len(failed[name]), strings.Join(seeds, " "))
	}
	fmt.Fprintf(w, "%d seeds in %s: %d commands (%d committed, %d rejected), %d gaps, %d refetches\n",
		len(reports), took.Round(time.Millisecond), commands, committed, rejected, gaps, refetches)
	types := map[string]int{}
	for _, r := range reports {
		for t, n := range r.Types {
			types[t] += n
		}
	}
	var sent []string
	for _, t := range kbcore.Types {
		sent = append(sent, fmt.Sprintf("%s %d", t, types[t]))
	}
	fmt.Fprintf(w, "sent by type: %s\n", strings.Join(sent, ", "))
	for _, r := range reports {
		if r.Err != "" {
			fmt.Fprintf(w, "\nseed %d could not run: %s\n  replay: %s\n", r.Seed, r.Err, r.Replay)
			continue
		}
		if !r.Failed() {
			continue
		}
		fmt.Fprintf(w, "\nseed %d FAILED (faults: %s)\n", r.Seed, r.Faults)
		for _, c := range r.Checks {
			if !c.Passed {
				fmt.Fprintf(w, "  %s:\n    %s\n", c.Name, strings.ReplaceAll(c.Detail, "\n", "\n    "))
			}
		}
		if r.Visualization != "" {
			fmt.Fprintf(w, "  linearizability visualization: %s\n", r.Visualization)
		}
		if r.Timeline != "" {
			fmt.Fprintf(w, "  timeline: %s\n", r.Timeline)
		}
		h := r.History
		if len(h) > 40 {
			h = h[len(h)-40:]
		}
		fmt.Fprintf(w, "  history (last %d events):\n    %s\n", len(h), strings.Join(h, "\n    "))
		fmt.Fprintf(w, "  replay: %s\n", r.Replay)
	}
}

// writeSeedJSON writes one JSON line per seed to path ("-": stdout).
func writeSeedJSON(path string, stdout io.Writer, reports []sim.SeedReport) error {
	w, closeFn, err := cliutil.CreateOutput(path, stdout)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	for _, r := range reports {
		if err := enc.Encode(r); err != nil {
			closeFn()
			return err
		}
	}
	return closeFn()
}

// writeSeedJUnit writes one suite per checker with one case per seed.
func writeSeedJUnit(path string, reports []sim.SeedReport) error {
	var total time.Duration
	for _, r := range reports {
		total += r.Duration
	}
	doc := report.JUnitDoc{Name: "kbkit conformance run", Time: report.Seconds(total)}
	for _, name := range sim.Checkers {
		s := &report.JUnitSuite{Name: "conformance." + name, Time: report.Seconds(total)}
		for _, r := range reports {
			jc := report.JUnitCase{Name: fmt.Sprintf("seed=%d", r.Seed), Classname: "conformance." + name,
				Time: report.Seconds(r.Duration)}
			if r.Err != "" {
				jc.Error = &report.JUnitMsg{Message: "the seed could not run", Body: report.XMLText(r.Err + "\n\nreplay: " + r.Replay)}
				s.Errors++
			}
			for _, c := range r.Checks {
				if c.Name == name && !c.Passed {
					jc.Failure = &report.JUnitMsg{Message: name + " failed",
						Body: report.XMLText(c.Detail + "\n\nreplay: " + r.Replay + shrunkReplay(r) + "\n\nhistory:\n" + strings.Join(r.History, "\n"))}
					s.Failures++
				}
			}
			s.Cases = append(s.Cases, jc)
			s.Tests++
		}
		doc.Suites = append(doc.Suites, s)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := report.WriteJUnit(f, doc); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
