package cli

import (
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/internal/cliutil"
	"github.com/subspace/kbkit/pgfault"
	"github.com/subspace/kbkit/server/pgprovider"
)

// NewFailoverTestCommand returns `kbkit pg failover-test`.
func NewFailoverTestCommand() *cobra.Command {
	var (
		cfg      pgfault.Config
		topology string
		jsonOut  string
		verbose  bool
	)
	cmd := &cobra.Command{
		Use:   "failover-test",
		Short: "Fail Postgres over under load and count what acknowledged commands survived",
		Long: `Starts a PostgreSQL primary with one streaming standby from this machine's
binaries (synchronous by default: synchronous_standby_names='*',
synchronous_commit=on), the reference server's instances on a multi-host
DSN (target_session_attrs=read-write), and writers: kbcore Windows with
their own kb.onPage subscriptions, some on one shared page, the others
on pages of their own, each posting one command at a time and retrying it
with the same id until it is decided.

After --before of load the replication link stalls (--stall), the
primary's postmaster and backends get SIGKILL, its data directory is
deleted, --detect later (the time a failover manager takes to notice;
meanwhile there is no primary and commands are answered 503, retryable)
the standby is promoted (pg_ctl promote) and a new standby is seeded
from it (unless --no-reseed). The load goes on for --after past
the promotion; then every window must converge and every acknowledged
command is looked up in the new primary's log.

It prints acknowledged, found (at the seq of their answer), lost,
misplaced, duplicated, seqs reused, rejections, the seconds during which
writes failed, and the time from the promotion to the first successful
write and to every window converged.

--topology async-standby is the contrast: the standby is asynchronous,
and the commands the primary acknowledged during the stall are lost
(the stall then lasts until 5 commands were acknowledged in it, at most
2 s more, so the figure does not depend on luck); the seqs they had are
given to later commands. Such a run is expected to fail.

Exit status: 0 something was acknowledged and nothing went wrong, 1 a
finding (lost, duplicated, misplaced, seq reused, a gap, a rejection,
a window that did not converge), 2 the run could not be made.`,
		Example: `  kbkit pg failover-test
  kbkit pg failover-test --topology async-standby
  kbkit pg failover-test --writers 8 --before 3s --after 3s --json failover.json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runFailoverTest(c, cfg, topology, jsonOut, verbose)
		},
	}
	failoverTestFlags(cmd, &cfg, &topology, &jsonOut, &verbose)
	return cmd
}

func failoverTestFlags(cmd *cobra.Command, cfg *pgfault.Config, topology, jsonOut *string, verbose *bool) {
	fl := cmd.Flags()
	fl.StringVar(topology, "topology", string(pgprovider.TopologySyncStandby), "sync-standby or async-standby (the contrast)")
	fl.IntVar(&cfg.Writers, "writers", 6, "writers, each a device with one window")
	fl.IntVar(&cfg.Shared, "shared", 0, "writers on the shared page (default half of --writers, rounded up); the others get a page each")
	fl.IntVar(&cfg.Instances, "instances", 2, "reference server instances on the database")
	fl.DurationVar(&cfg.Before, "before", 2*time.Second, "load before the failover")
	fl.DurationVar(&cfg.After, "after", 2*time.Second, "load after the promotion")
	fl.DurationVar(&cfg.Think, "think", 20*time.Millisecond, "each writer's pause between commands")
	fl.DurationVar(&cfg.Stall, "stall", 300*time.Millisecond, "how long the replication link lags before the primary is lost (0: no stall)")
	fl.DurationVar(&cfg.Detect, "detect", time.Second, "time from the loss to the promotion (a failover manager noticing; 0: at once): no primary meanwhile")
	fl.BoolVar(&cfg.NoReseed, "no-reseed", false, "do not seed a new standby after the promotion")
	fl.StringVar(&cfg.Scenario, "scenario", "", "\"\" (the primary's machine is lost) or split-brain (the old primary stays alive, cut off by a fault layer from the standby and from the first instance; no reseed)")
	fl.BoolVar(&cfg.NoFence, "no-fence", false, "split-brain: run the instances without fencing (store.OpenOptions.Fence), to see what it prevents")
	fl.DurationVar(&cfg.Settle, "settle", 10*time.Second, "bound on the wait for commands in flight and convergence after the load")
	fl.Int64Var(&cfg.Seed, "seed", 1, "seed of the writers' choices")
	fl.StringVar(jsonOut, "json", "", "also write the result as JSON to this file")
	fl.BoolVarP(verbose, "verbose", "v", false, "progress on stderr")
}

// runFailoverTest is `kbkit pg failover-test` once its flags are read.
func runFailoverTest(c *cobra.Command, cfg pgfault.Config, topology, jsonOut string, verbose bool) error {
	ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stdout, stderr := c.OutOrStdout(), c.ErrOrStderr()
	t, err := pgprovider.ParseTopology(topology)
	if err != nil {
		return errored(stderr, "failover-test", err)
	}
	cfg.Topology = t
	if cfg.Scenario == pgfault.ScenarioSplitBrain {
		cfg.NoReseed = true // the old primary keeps its address
	}
	// 0 in the Config is "the default"; an explicit 0 is "none".
	if c.Flags().Changed("stall") && cfg.Stall == 0 {
		cfg.Stall = -1
	}
	if c.Flags().Changed("detect") && cfg.Detect == 0 {
		cfg.Detect = -1
	}
	if verbose {
		cfg.Logf = progress(stderr, 3)
	}
	res, err := pgfault.Run(ctx, cfg)
	if err != nil {
		return errored(stderr, "failover-test", err)
	}
	pgfault.Text(stdout, res)
	if jsonOut != "" {
		if err := writeJSON(jsonOut, res); err != nil {
			return errored(stderr, "failover-test", "--json:", err)
		}
	}
	if !res.OK() {
		return cliutil.ExitError{Code: cliutil.ExitFailed}
	}
	return nil
}
