package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/internal/cliutil"
	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/sim"
	"github.com/subspace/kbkit/speckit/report"
	"github.com/subspace/kbkit/target"
)

// errored ends a run that could not proceed: why on stderr, exit 2.
func errored(stderr io.Writer, why any) error {
	fmt.Fprintln(stderr, "kbkit conformance run:", why)
	return cliutil.ExitError{Code: cliutil.ExitErrored}
}

// runConformance is `kbkit conformance run`: it settles the flags, opens
// the target, runs the seeds, prints the table, shrinks the first
// failure, writes --json and --junit, and exits with the verdict.
func runConformance(c *cobra.Command, f conformanceFlags, broken BrokenServers) error {
	ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stderr := c.ErrOrStderr()
	if err := f.settle(c.Flags()); err != nil {
		return errored(stderr, err)
	}
	// A client that cannot start ends the run before a server is even
	// started (sim.RunSeeds checks again, for its other callers).
	if err := sim.PreflightClients(ctx, f.options()); err != nil {
		return errored(stderr, cliutil.CannotRun(err))
	}
	tgt, fresh, closeTarget, err := openTarget(ctx, &f, broken)
	if err != nil {
		return errored(stderr, err)
	}
	defer closeTarget()
	start := time.Now()
	opts := f.options()
	reports, err := runSeeds(ctx, stderr, tgt, &opts, start)
	if err != nil && len(reports) == 0 { // nothing ran: no table of zeros
		return errored(stderr, cliutil.CannotRun(err))
	}
	if err == nil {
		rerunFailures(ctx, stderr, tgt, fresh, opts, f.reruns, reports)
	}
	out := c.OutOrStdout()
	table := out
	if f.jsonOut == "-" {
		table = stderr
	}
	printReports(table, stderr, f, reports, time.Since(start))
	if err == nil {
		shrinkFirstFailure(ctx, table, stderr, tgt, fresh, opts, f.shrinkFlags, unexpected(f.baseline, reports))
	}
	stale := judgeExpectations(table, f.baseline, reports)
	if werr := writeOutputs(f, out, reports); werr != nil {
		return errored(stderr, werr)
	}
	if err != nil {
		return errored(stderr, cliutil.CannotRun(err))
	}
	return verdict(stderr, reports, f.strict, f.baseline, stale)
}

// settle completes the flags as the run reads them (a lone --seed is one
// seed; --client without --windows opens no window of the kit's own; the
// server and tokens may come from the environment; --choices is read,
// --html's directory made, Porcupine's directory chosen) and refuses
// what cannot run, before anything starts.
func (f *conformanceFlags) settle(fl *pflag.FlagSet) error {
	if f.seedSet && !fl.Changed("seeds") {
		f.seeds = 1
	}
	if len(f.clients) > 0 && !fl.Changed("windows") {
		f.windows = 0
	}
	for _, line := range f.clients {
		if strings.TrimSpace(line) == "" {
			return errors.New("--client needs a command line")
		}
	}
	f.server, f.tokens = client.ServerFromEnv(f.server, f.tokens)
	if f.htmlAll && f.htmlDir == "" {
		return errors.New("--html-all needs --html DIR")
	}
	if err := f.readChoices(); err != nil {
		return err
	}
	if f.htmlDir != "" {
		if err := os.MkdirAll(f.htmlDir, 0o755); err != nil {
			return fmt.Errorf("--html: %w", err)
		}
	}
	if f.reruns < 0 {
		return errors.New("--reruns cannot be negative")
	}
	f.choicesDir = f.outDir
	f.outDir = porcupineDir(*f)
	var err error
	if f.baseline, err = loadRunExpect(f); err != nil {
		return err
	}
	if f.server == "" && (f.restartCmd != "" || f.pgRestartCmd != "") {
		return errors.New("--restart-command and --postgres-restart-command need --server (the embedded server restarts itself)")
	}
	return nil
}

// openTarget opens the run's server (openServer), behind --broken-server's
// proxy when given. fresh makes a shrink's target per run (nil: the
// target itself); closeTarget ends all openTarget started.
func openTarget(ctx context.Context, f *conformanceFlags, broken BrokenServers) (tgt sim.Target,
	fresh func() (sim.Target, func(), error), closeTarget func(), err error) {
	tgt, closeServer, err := openServer(ctx, f)
	if err != nil || f.broken == "" {
		return tgt, nil, closeServer, err
	}
	if broken.New == nil {
		closeServer()
		return nil, nil, nil, errors.New("--broken-server: no broken servers in this build")
	}
	base, variant := tgt, f.broken
	fresh = func() (sim.Target, func(), error) { return broken.New(base, variant) }
	b, stopProxy, err := broken.New(base, variant)
	if err != nil {
		closeServer()
		return nil, nil, nil, err
	}
	return b, fresh, func() { stopProxy(); closeServer() }, nil
}

// openServer is --server's server (with the operator's restart commands),
// else the reference server in process on a Postgres of pgprovider's
// (--topology over $KBKIT_PG_TOPOLOGY; f.topology becomes the one in
// use, for the replay line).
func openServer(ctx context.Context, f *conformanceFlags) (sim.Target, func(), error) {
	if f.server != "" {
		return sim.RemoteWith(f.server, f.tokens, sim.RemoteCommands{RestartInstance: f.restartCmd, RestartPostgres: f.pgRestartCmd}), func() {}, nil
	}
	popts := pgprovider.OptionsFromEnv()
	if f.topology != "" {
		popts.Topology = pgprovider.Topology(f.topology)
	}
	f.topology = string(popts.Topology)
	e, stop, err := target.Provide(ctx, target.ProvideOptions{Postgres: popts, Embedded: target.EmbeddedOptions{Instances: f.instances}})
	if err != nil {
		return nil, nil, err
	}
	return e, stop, nil
}

// runSeeds runs opts' seeds against tgt with the progress lines and the
// run's log on stderr (opts gets its Logf and Progress).
func runSeeds(ctx context.Context, stderr io.Writer, tgt sim.Target, opts *sim.Options, start time.Time) ([]sim.SeedReport, error) {
	progress := newSeedProgress(stderr, report.IsTerminal(stderr), opts.Seeds, start)
	opts.Logf = func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }
	opts.Progress = progress.seed
	stopTicker := progress.tick()
	reports, err := sim.RunSeeds(ctx, tgt, *opts)
	stopTicker()
	progress.clear()
	return reports, err
}

// rerunFailures replays each failing seed's choices n times (sim.Rerun)
// so that its report says how often it fails; a broken server gets a
// fresh proxy per replay, as a replay line's run does.
func rerunFailures(ctx context.Context, stderr io.Writer, tgt sim.Target, fresh func() (sim.Target, func(), error),
	opts sim.Options, n int, reports []sim.SeedReport) {
	failing := 0
	for _, r := range reports {
		if r.Halt != "" {
			return // the server stopped answering: the run stops (sim.RerunFailures)
		}
		if r.Err == "" && r.Failed() {
			failing++
		}
	}
	if n <= 0 || failing == 0 {
		return
	}
	fmt.Fprintf(stderr, "kbkit conformance run: replaying the choices of %d failing seeds %d more times each (--reruns)\n", failing, n)
	sim.RerunFailures(ctx, tgt, opts, reports, n, fresh)
}

// printReports prints the table (summarize) and the clients' coverage to
// table, and to stderr what --html left out and the seeds that could not
// run.
func printReports(table, stderr io.Writer, f conformanceFlags, reports []sim.SeedReport, took time.Duration) {
	summarize(table, reports, took)
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
}

// writeOutputs writes --json and --junit.
func writeOutputs(f conformanceFlags, stdout io.Writer, reports []sim.SeedReport) error {
	if f.jsonOut != "" {
		if err := writeSeedJSON(f.jsonOut, stdout, reports); err != nil {
			return fmt.Errorf("--json: %w", err)
		}
	}
	if f.junit != "" {
		if err := writeSeedJUnit(f.junit, reports, f.baseline); err != nil {
			return fmt.Errorf("--junit: %w", err)
		}
	}
	return nil
}

// verdict is the run's exit: 1 a checker failed that no entry of
// baseline lets fail, an expectation is stale, or (strict) a checker was
// skipped by every seed; 2 a seed could not run, else 0; it says on
// stderr why the run stopped early and which checkers were skipped.
func verdict(stderr io.Writer, reports []sim.SeedReport, strict bool, baseline *report.Expectations, stale bool) error {
	failed, couldNotRun := stale, false
	var unallowed []string
	for _, r := range reports {
		if r.Err != "" {
			couldNotRun = true
		}
		if unexpectedFailure(baseline, r) {
			failed = true
		}
		for _, c := range r.Checks {
			if !c.Passed && baseline != nil && allows(baseline, c.Name) == nil && !slices.Contains(unallowed, c.Name) {
				unallowed = append(unallowed, c.Name)
			}
		}
		if r.Halt != "" {
			fmt.Fprintf(stderr, "kbkit conformance run: stopped after %s\n", r.Halt)
		}
	}
	if len(unallowed) > 0 {
		fmt.Fprintf(stderr, "kbkit conformance run: failed without an expectation in %s: %s\n", baseline.Path, strings.Join(unallowed, ", "))
	}
	if skipped := sim.Skipped(reports); len(skipped) > 0 {
		fmt.Fprintf(stderr, "kbkit conformance run: skipped (no seed gave them anything to check): %s\n", strings.Join(skipped, ", "))
		if strict {
			failed = true
		}
	}
	switch {
	case failed:
		return cliutil.ExitError{Code: cliutil.ExitFailed}
	case couldNotRun:
		return cliutil.ExitError{Code: cliutil.ExitErrored}
	}
	return nil
}
