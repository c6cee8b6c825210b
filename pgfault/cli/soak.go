package cli

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/internal/cliutil"
	"github.com/subspace/kbkit/pgfault"
	"github.com/subspace/kbkit/pgfault/netfault"
)

// NewSoakCommand returns `kbkit pg soak`.
func NewSoakCommand() *cobra.Command {
	var (
		cfg              pgfault.Config
		jsonOut, htmlOut string
		pprofAddr        string
		verbose          bool
	)
	cmd := &cobra.Command{
		Use:   "soak",
		Short: "Edit for a long time through faults of the link to Postgres and watch memory, goroutines, connections and descriptors",
		Long: `Starts a PostgreSQL server, a fault layer in front of it (as kbkit pg
partition-test), the reference server as a process of its own (this
binary's serve, through the fault layer) and the writers of kbkit pg
failover-test, each of whose pages stops growing after --max-nodes
nodes. For --duration the writers edit while the link suffers each of
--fault in turn for --hold, with --gap of a healthy link between.

Every --sample the server's and this generator's resident memory,
goroutines (the server's go_goroutines), open sockets and file
descriptors are sampled; every --audit what was acknowledged is looked up
in the log at the seq of its answer and forgotten, so that the
generator's own bookkeeping stays bounded. At the end every window must
converge and the rest of what was acknowledged is found in the log.

It fails (exit 1) if any command acknowledged is lost, misplaced or
duplicated, any valid command rejected, or any series grew by more
than 10 % after the warm-up (--warmup, default a fifth of --duration,
at least 20 s),
judged on the samples taken on a healthy link, 5 s or more after a heal
(a fault's reconnections are not a leak): memory by its trend line
(Theil-Sen) at the last sample over the line at the first; a count by
the median of its last quarter over that of its first, and only if the
least of its last quarter is also ` + strconv.Itoa(pgfault.CountSlack) + ` or more above the least of
its first. With fewer than ` + strconv.Itoa(pgfault.MinTrendSamples) + ` such samples, or samples taken late
because the machine starved the run, growth is reported as not
measurable here and not judged. --html writes the charts. Exit 2:
could not run.`,
		Example: `  kbkit pg soak --duration 30m --html out/soak.html
  kbkit pg soak --duration 2m --gap 10s`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runSoak(c, cfg, jsonOut, htmlOut, pprofAddr, verbose)
		},
	}
	soakFlags(cmd, &cfg, &jsonOut, &htmlOut, &pprofAddr, &verbose)
	return cmd
}

func soakFlags(cmd *cobra.Command, cfg *pgfault.Config, jsonOut, htmlOut, pprofAddr *string, verbose *bool) {
	fl := cmd.Flags()
	fl.DurationVar(&cfg.Soak, "duration", 30*time.Minute, "how long the editing and the faults go on")
	fl.StringArrayVar(&cfg.Faults, "fault", nil, "faults to run in turn (repeat; default all: "+strings.Join(netfault.Names(), ", ")+")")
	fl.DurationVar(&cfg.Hold, "hold", 6*time.Second, "how long each fault lasts")
	fl.DurationVar(&cfg.Gap, "gap", 20*time.Second, "healthy link between two faults")
	fl.DurationVar(&cfg.Warmup, "warmup", 0, "samples before it are not judged (default a fifth of --duration, at least 20s)")
	fl.DurationVar(&cfg.SampleEvery, "sample", time.Second, "time between two samples")
	fl.DurationVar(&cfg.AuditEvery, "audit", 20*time.Second, "time between two audits of what was acknowledged")
	fl.IntVar(&cfg.Writers, "writers", 6, "writers, each a device with one window")
	fl.IntVar(&cfg.MaxNodes, "max-nodes", 12, "nodes each writer creates before it only edits")
	fl.DurationVar(&cfg.Think, "think", 20*time.Millisecond, "each writer's pause between commands")
	fl.DurationVar(&cfg.Settle, "settle", 20*time.Second, "bound on the wait for commands in flight and convergence after the load")
	fl.Int64Var(&cfg.Seed, "seed", 1, "seed of the writers' choices")
	fl.StringVar(jsonOut, "json", "", "also write the result (samples included) as JSON to this file")
	fl.StringVar(htmlOut, "html", "", "write the charts and verdicts as an HTML page to this file")
	fl.StringVar(pprofAddr, "pprof", "", "serve this generator's net/http/pprof on this loopback address (127.0.0.1:6060) while it runs")
	fl.BoolVarP(verbose, "verbose", "v", false, "progress on stderr")
}

// runSoak is `kbkit pg soak` once its flags are read.
func runSoak(c *cobra.Command, cfg pgfault.Config, jsonOut, htmlOut, pprofAddr string, verbose bool) error {
	ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stdout, stderr := c.OutOrStdout(), c.ErrOrStderr()
	if cfg.Soak <= 0 {
		return errored(stderr, "soak", "--duration must be positive")
	}
	bin, err := os.Executable()
	if err != nil {
		return errored(stderr, "soak", err)
	}
	cfg.ServerBinary = bin
	if pprofAddr != "" {
		runtime.MemProfileRate = 4096
		stopPprof, err := servePprof(pprofAddr)
		if err != nil {
			return errored(stderr, "soak", "--pprof:", err)
		}
		defer stopPprof()
	}
	if verbose {
		cfg.Logf = progress(stderr, 1)
	}
	res, err := pgfault.Run(ctx, cfg)
	if err != nil {
		return errored(stderr, "soak", err)
	}
	pgfault.SoakText(stdout, res)
	if jsonOut != "" {
		if err := writeJSON(jsonOut, res); err != nil {
			return errored(stderr, "soak", "--json:", err)
		}
	}
	if htmlOut != "" {
		f, err := os.Create(htmlOut)
		if err == nil {
			err = pgfault.SoakHTML(f, res)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return errored(stderr, "soak", "--html:", err)
		}
	}
	if !res.OK() {
		return cliutil.ExitError{Code: cliutil.ExitFailed}
	}
	return nil
}

// servePprof serves net/http/pprof's handlers on a loopback address until
// the returned stop is called.
func servePprof(addr string) (func(), error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("%s is not a loopback address", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	return func() { _ = srv.Close(); <-done }, nil
}
