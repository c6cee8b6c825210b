package cli

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/internal/cliutil"
	"github.com/subspace/kbkit/pgfault"
	"github.com/subspace/kbkit/pgfault/netfault"
)

// NewPartitionTestCommand returns `kbkit pg partition-test`.
func NewPartitionTestCommand() *cobra.Command {
	var (
		cfg     pgfault.Config
		faults  []string
		jsonOut string
		verbose bool
	)
	cmd := &cobra.Command{
		Use:   "partition-test",
		Short: "Cut, slow and flap the link between the server and Postgres under load and count what survived",
		Long: `For each --fault (default every one): starts a PostgreSQL server, a
fault layer between it and the reference server's instances (a toxiproxy
proxy on loopback: the instances, their dispatchers and LISTEN
connections dial Postgres through it) and the writers of kbkit pg
failover-test. After --before of load the fault is put on the link for
--hold, then the link heals and the load goes on for --after.

Faults: ` + strings.Join(netfault.Names(), ", ") + `.

Per fault it prints: commands acknowledged, lost and duplicated (both
must be 0), rejected (a transient failure answered as a decision: must
be 0), the time from the fault to the first answer of a call made
during it (a retryable 503 or a decision), the longest such call and its
bound (the server's --db-timeout, 5 s, plus 1 s), and the time from the
heal to the first commit and to every window converged.

Exit status: 0 every fault passed, 1 a finding, 2 the run could not be made.`,
		Example: `  kbkit pg partition-test
  kbkit pg partition-test --fault blackhole --hold 5s`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runPartitionTest(c, cfg, faults, jsonOut, verbose)
		},
	}
	partitionTestFlags(cmd, &cfg, &faults, &jsonOut, &verbose)
	return cmd
}

func partitionTestFlags(cmd *cobra.Command, cfg *pgfault.Config, faults *[]string, jsonOut *string, verbose *bool) {
	fl := cmd.Flags()
	fl.StringArrayVar(faults, "fault", nil, "a fault to run (repeat; default all: "+strings.Join(netfault.Names(), ", ")+")")
	fl.DurationVar(&cfg.Hold, "hold", 6*time.Second, "how long each fault lasts (past the server's 5 s --db-timeout: a blackhole is answered by it)")
	fl.IntVar(&cfg.Writers, "writers", 6, "writers, each a device with one window")
	fl.IntVar(&cfg.Instances, "instances", 2, "reference server instances on the database")
	fl.DurationVar(&cfg.Before, "before", 2*time.Second, "load before the fault")
	fl.DurationVar(&cfg.After, "after", 2*time.Second, "load after the heal")
	fl.DurationVar(&cfg.Think, "think", 20*time.Millisecond, "each writer's pause between commands")
	fl.DurationVar(&cfg.Settle, "settle", 15*time.Second, "bound on the wait for commands in flight and convergence after the load")
	fl.Int64Var(&cfg.Seed, "seed", 1, "seed of the writers' choices")
	fl.StringVar(jsonOut, "json", "", "also write the results as JSON to this file")
	fl.BoolVarP(verbose, "verbose", "v", false, "progress on stderr")
}

// runPartitionTest is `kbkit pg partition-test` once its flags are read.
func runPartitionTest(c *cobra.Command, cfg pgfault.Config, faults []string, jsonOut string, verbose bool) error {
	ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stdout, stderr := c.OutOrStdout(), c.ErrOrStderr()
	if len(faults) == 0 {
		faults = netfault.Names()
	}
	for _, f := range faults {
		if _, err := netfault.Parse(f); err != nil {
			return errored(stderr, "partition-test", err)
		}
	}
	if verbose {
		cfg.Logf = progress(stderr, 3)
	}
	var results []*pgfault.Result
	for _, f := range faults {
		one := cfg
		one.Fault = f
		res, err := pgfault.Run(ctx, one)
		if err != nil {
			return errored(stderr, "partition-test", f+":", err)
		}
		fmt.Fprintf(stderr, "kbkit pg partition-test: %s done\n", f)
		results = append(results, res)
	}
	pgfault.FaultTable(stdout, results)
	if jsonOut != "" {
		if err := writeJSON(jsonOut, results); err != nil {
			return errored(stderr, "partition-test", "--json:", err)
		}
	}
	for _, r := range results {
		if !r.OK() {
			return cliutil.ExitError{Code: cliutil.ExitFailed}
		}
	}
	return nil
}
