package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/conformance"
	"github.com/subspace/kbkit/conformance/report"
	"github.com/subspace/kbkit/server/pgprovider"
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
	seed                                             int64
	seedSet                                          bool
	faults, trace, bursts                            bool
	server, topology                                 string
	tokens                                           []string
	junit, jsonOut, outDir                           string
	echoTimeout                                      time.Duration
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
kbkit pg up). With --server URL it needs one --token per device (all of one
workspace).

--seed S replays one seed exactly. Exit status: 0 every checker passed,
1 a checker failed, 2 the run could not proceed.`,
		RunE: func(c *cobra.Command, args []string) error {
			f.seedSet = c.Flags().Changed("seed")
			return runConformance(c, f)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.seeds, "seeds", 10, "number of seeds to run (from --seed, default 1)")
	fl.Int64Var(&f.seed, "seed", 1, "run exactly this seed (replay)")
	fl.IntVar(&f.windows, "windows", 4, "windows per seed")
	fl.IntVar(&f.pages, "pages", 3, "pages per seed")
	fl.IntVar(&f.steps, "steps", 100, "scheduler steps per seed")
	fl.IntVar(&f.devices, "devices", 2, "devices per seed")
	fl.IntVar(&f.instances, "instances", 2, "embedded server instances sharing the database")
	fl.BoolVar(&f.faults, "faults", false, "inject faults (drawn per seed)")
	fl.BoolVar(&f.trace, "trace", false, "print every scheduler event on stderr as it happens")
	fl.BoolVar(&f.bursts, "bursts", false, "also post several windows' commands at once (exercises group commit; such seeds do not replay exactly)")
	fl.StringVar(&f.topology, "topology", "", "embedded Postgres: single, sync-standby or async-standby (default $"+pgprovider.EnvTopology+" or single); with a standby, every seed with --faults fails over once at mid-seed")
	fl.StringVar(&f.server, "server", "", "URL of a server speaking spec/PROTOCOL.md (default: embedded reference server)")
	fl.StringArrayVar(&f.tokens, "token", nil, "device token for --server (repeat: one device per token)")
	fl.StringVar(&f.junit, "junit", "", "write a JUnit XML report to this file")
	fl.StringVar(&f.jsonOut, "json", "", "write one JSON line per seed to this file")
	fl.StringVar(&f.outDir, "out", ".", "directory for Porcupine visualisations of failures")
	fl.DurationVar(&f.echoTimeout, "echo-timeout", 10*time.Second, "how long to wait for an echo the server owes")
	return cmd
}

func runConformance(c *cobra.Command, f conformanceFlags) error {
	ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stderr := c.ErrOrStderr()
	if f.seedSet && !c.Flags().Changed("seeds") {
		f.seeds = 1
	}
	var target conformance.Target
	if f.server != "" {
		target = conformance.Remote(f.server, f.tokens)
	} else {
		popts := pgprovider.OptionsFromEnv()
		if f.topology != "" {
			popts.Topology = pgprovider.Topology(f.topology)
		}
		pg, err := pgprovider.Start(ctx, popts)
		if err != nil {
			fmt.Fprintln(stderr, "kbkit conformance run:", err)
			return exitError{exitErrored}
		}
		defer pg.Stop(context.WithoutCancel(ctx))
		dsn, drop, err := pg.NewDatabase(ctx, "")
		if err != nil {
			fmt.Fprintln(stderr, "kbkit conformance run:", err)
			return exitError{exitErrored}
		}
		defer drop(context.WithoutCancel(ctx)) // leave a borrowed server as it was
		var restartable *pgprovider.Server
		if pg.Kind() != pgprovider.KindDSN { // a server we did not start is not ours to restart
			restartable = pg
		}
		e, err := conformance.NewEmbedded(ctx, dsn, conformance.EmbeddedOptions{Instances: f.instances, Postgres: restartable})
		if err != nil {
			fmt.Fprintln(stderr, "kbkit conformance run:", err)
			return exitError{exitErrored}
		}
		defer e.Close()
		target = e
	}
	tty := report.IsTerminal(stderr)
	start := time.Now()
	opts := conformance.Options{
		Seed: f.seed, Seeds: f.seeds, Windows: f.windows, Pages: f.pages, Devices: f.devices,
		Steps: f.steps, Faults: f.faults, OutDir: f.outDir, EchoTimeout: f.echoTimeout, Trace: f.trace, Bursts: f.bursts,
		Logf: func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) },
		Progress: func(done, total int, r conformance.SeedReport) {
			if tty {
				verdict := "ok"
				if r.Failed() || r.Err != "" {
					verdict = "FAILED"
				}
				fmt.Fprintf(stderr, "\r\033[Kseed %d/%d (%d: %s) %s", done, total, r.Seed, verdict, time.Since(start).Round(time.Second))
			}
		},
	}
	reports, err := conformance.RunSeeds(ctx, target, opts)
	if tty {
		fmt.Fprint(stderr, "\r\033[K")
	}
	out := c.OutOrStdout()
	summarize(out, reports, time.Since(start))
	if f.jsonOut != "" {
		if err := writeSeedJSON(f.jsonOut, reports); err != nil {
			fmt.Fprintln(stderr, "kbkit conformance run:", err)
			return exitError{exitErrored}
		}
	}
	if f.junit != "" {
		if err := writeSeedJUnit(f.junit, reports); err != nil {
			fmt.Fprintln(stderr, "kbkit conformance run:", err)
			return exitError{exitErrored}
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "kbkit conformance run:", err)
		return exitError{exitErrored}
	}
	failed, errored := false, false
	for _, r := range reports {
		if r.Err != "" {
			errored = true
		}
		if r.Failed() {
			failed = true
		}
	}
	switch {
	case failed:
		return exitError{exitFailed}
	case errored:
		return exitError{exitErrored}
	}
	return nil
}

// summarize prints a table per checker, then every failure with its seed.
func summarize(w io.Writer, reports []conformance.SeedReport, took time.Duration) {
	passed := map[string]int{}
	failed := map[string][]int64{}
	var commands, committed, rejected, refetches, gaps int
	for _, r := range reports {
		for _, c := range r.Checks {
			if c.Passed {
				passed[c.Name]++
			} else {
				failed[c.Name] = append(failed[c.Name], r.Seed)
			}
		}
		commands += r.Stats.Commands
		committed += r.Stats.Committed
		rejected += r.Stats.Rejected
		refetches += r.Stats.Refetches
		gaps += r.Stats.Gaps
	}
	fmt.Fprintf(w, "%-16s %6s %6s  %s\n", "checker", "passed", "failed", "failing seeds")
	for _, name := range conformance.Checkers {
		seeds := make([]string, 0, len(failed[name]))
		for _, s := range failed[name] {
			seeds = append(seeds, fmt.Sprint(s))
		}
		fmt.Fprintf(w, "%-16s %6d %6d  %s\n", name, passed[name], len(failed[name]), strings.Join(seeds, " "))
	}
	fmt.Fprintf(w, "%d seeds in %s: %d commands (%d committed, %d rejected), %d gaps, %d refetches\n",
		len(reports), took.Round(time.Millisecond), commands, committed, rejected, gaps, refetches)
	for _, r := range reports {
		if r.Err != "" {
			fmt.Fprintf(w, "\nseed %d could not run: %s\n", r.Seed, r.Err)
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
		h := r.History
		if len(h) > 40 {
			h = h[len(h)-40:]
		}
		fmt.Fprintf(w, "  history (last %d events):\n    %s\n", len(h), strings.Join(h, "\n    "))
		fmt.Fprintf(w, "  replay: kbkit conformance run --seed %d\n", r.Seed)
	}
}

func writeSeedJSON(path string, reports []conformance.SeedReport) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, r := range reports {
		if err := enc.Encode(r); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// writeSeedJUnit writes one suite per checker with one case per seed.
func writeSeedJUnit(path string, reports []conformance.SeedReport) error {
	var total time.Duration
	for _, r := range reports {
		total += r.Duration
	}
	doc := report.JUnitDoc{Name: "kbkit conformance run", Time: report.Seconds(total)}
	for _, name := range conformance.Checkers {
		s := &report.JUnitSuite{Name: "conformance." + name, Time: report.Seconds(total)}
		for _, r := range reports {
			jc := report.JUnitCase{Name: fmt.Sprintf("seed=%d", r.Seed), Classname: "conformance." + name,
				Time: report.Seconds(r.Duration)}
			if r.Err != "" {
				jc.Error = &report.JUnitMsg{Message: "the seed could not run", Body: report.XMLText(r.Err)}
				s.Errors++
			}
			for _, c := range r.Checks {
				if c.Name == name && !c.Passed {
					jc.Failure = &report.JUnitMsg{Message: name + " failed",
						Body: report.XMLText(c.Detail + "\n\nhistory:\n" + strings.Join(r.History, "\n"))}
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
