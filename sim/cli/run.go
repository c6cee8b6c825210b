package cli

import (
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/sim"
	"github.com/subspace/kbkit/speckit/report"
)

// BrokenServers are what the hidden --broken-server flag puts a target
// behind: a proxy that breaks one guarantee, to see the checkers and the
// timeline catch a bug. They live in package sim/broken, which only cmd/
// and tests may import, so the command line passes them in (New nil: the
// flag is refused).
type BrokenServers struct {
	// Variants name the broken servers (the flag's help lists them).
	Variants []string
	// New puts t behind the named variant; stop ends the proxy.
	New func(t sim.Target, variant string) (b sim.Target, stop func(), err error)
}

// conformanceFlags are `conformance run`'s flags.
type conformanceFlags struct {
	seeds, windows, pages, steps, devices, instances int
	others                                           int
	parallel                                         int
	seed                                             int64
	seedSet                                          bool
	faults, trace, bursts, strict, htmlAll           bool
	server, topology, htmlDir, broken                string
	restartCmd, pgRestartCmd                         string
	tokens, clients                                  []string
	junit, jsonOut, outDir                           string
	expect                                           string
	baseline                                         *report.Expectations // --expect's entries for this run (settle)
	echoTimeout, seedTimeout                         time.Duration
	shrinkFlags
}

// NewRunCommand returns `conformance run`, its hidden --broken-server
// flag served by broken.
func NewRunCommand(broken BrokenServers) *cobra.Command {
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
tokens as placeholders ($KBKIT_TOKEN; several: $KBKIT_TOKEN_1, ...), and
with how often it failed: before it is reported, it is replayed from its
recorded choices --reruns times ("failed 3 of 3"; "failed 1 of 3: not
reproducible, timing-dependent" is still a failure). Its history is that
of the window its findings name, around the finding (else the last 40
events).

The first failing seed is shrunk (--shrink, on unless --choices is given;
--shrink=false: off): its history (steps, windows, pages, devices, faults,
the scheduler's choices) is reduced to a small one that still fails the
same checker, within --shrink-budget, a candidate taken only if it fails
in each of its --shrink-runs runs. A failure that does not recur under
replay is not shrunk (the report says so). It prints the before/after
counts and the command that replays the shrunk history (--choices FILE,
written into --out DIR, else into a new directory of the run's in the
OS's temporary directory, never over another file), and with --html its
timeline (seed-N-choices.html).

--client "CMD ARGS" (repeatable) drives another team's client through the
client suite of the adapter protocol (spec/ADAPTER.md section 7): one
window of it per seed, beside --windows of the kit's own (0 by default
with --client), on the same pages. The kit also acts as the other users
of each client's page (--others, one window per client by default; 0:
none): it edits beside the client and, through the client's proxy,
holds the client's post while it deletes or merges what the command
edits (the server rejects it), loses the answer, refuses retries until
the client refetches or its instance restarts, and drops echoes, so
that every checker has something to check. The client does its own
networking, to a fault proxy of the kit in front of the server; every
checker runs on the merged history, and the report lists the intents
and faults each client saw:

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

Each checker counts its evidence (rollback: commands rejected; refetch:
gaps; exactly-once: retried ids; dedup: retries of decided ids;
outcomes: decided pending ids; resume: resubscribes; ...), shown in the
table. A checker with no evidence in a seed is skipped there, never
passed; one that no seed gave anything to check (e.g. dedup without
lost responses, refetch without dropped echoes) is named on stderr as
skipped; with --strict a skipped checker fails the run (exit 1).

--expect FILE reads an expectations file (spec/EXPECTATIONS.md) by
checker name, an entry narrowed to a --client command line (client:) or
a server (server: the --broken-server variant or the --server URL) or
applying to any run: a checker expected to fail (status fail) may fail
without failing the run, but if no seed fails it while some seed checked
it, the entry is stale and fails the run (the ratchet); known_flaky lets
it fail or pass. The verdict on each entry is printed after the table.
An entry that names no checker, or has status skip, is refused before
the run (exit 2):

  kbkit conformance run --client "node examples/client-js/adapter.mjs --broken keep-rejected" \
      --seeds 10 --faults --expect client-expectations.yaml

Exit status: 0 every checker passed (or failed as --expect allows), 1 a
checker failed (or, with --strict, was skipped) or an expectation is
stale, 2 the run could not proceed.`,
		RunE: func(c *cobra.Command, args []string) error {
			f.seedSet = c.Flags().Changed("seed")
			f.shrinkSet = c.Flags().Changed("shrink")
			return runConformance(c, f, broken)
		},
	}
	addConformanceRunFlags(cmd.Flags(), &f, broken.Variants)
	return cmd
}

// addConformanceRunFlags defines conformance run's flags on fl (the
// replay test parses a printed replay line with them); brokenVariants
// are --broken-server's values.
func addConformanceRunFlags(fl *pflag.FlagSet, f *conformanceFlags, brokenVariants []string) {
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
	fl.StringArrayVar(&f.clients, "client", nil, "a client adapter's command line (spec/ADAPTER.md section 7; repeat for more): each opens one window per seed, with its own networking, through a fault proxy; without --windows, the kit opens no windows of its own but the --others on its page")
	fl.IntVar(&f.others, "others", 1, "with --client: kit windows acting as the other users on each client's page, beside --windows (concurrent edits, deletes and merges under its commands, lost answers; 0: none)")
	fl.StringArrayVar(&f.tokens, "token", nil, "device token for --server (repeat: one device per token; default $KBKIT_TOKEN)")
	fl.StringVar(&f.restartCmd, "restart-command", "", "with --server: shell command that kills and restarts the server instance ($KBKIT_INSTANCE_URL); lets --faults draw instance restarts")
	fl.StringVar(&f.pgRestartCmd, "postgres-restart-command", "", "with --server: shell command that restarts the server's Postgres; lets --faults draw Postgres restarts")
	fl.StringVar(&f.junit, "junit", "", "write a JUnit XML report to this file")
	fl.StringVar(&f.jsonOut, "json", "", "write one JSON line per seed to this file (- = stdout; the table then goes to stderr)")
	fl.StringVar(&f.outDir, "out", "", "directory for Porcupine visualisations of failures (default: the --html directory, else that of --junit or --json, else the current one) and a shrink's choice files (default: a new directory in the OS's temporary directory)")
	fl.DurationVar(&f.echoTimeout, "echo-timeout", 10*time.Second, "how long to wait for an echo the server owes")
	fl.DurationVar(&f.seedTimeout, "seed-timeout", sim.DefaultSeedTimeout, "deadline of one seed, checks included")
	fl.BoolVar(&f.strict, "strict", false, "a checker skipped by every seed fails the run (exit 1)")
	fl.StringVar(&f.expect, "expect", "", "expectations file (spec/EXPECTATIONS.md): checkers expected to fail or known to be flaky, for a --client command line or a server or for any run")
	fl.StringVar(&f.htmlDir, "html", "", "write a timeline page (seed-N.html) of every failing seed to this directory")
	fl.BoolVar(&f.htmlAll, "html-all", false, "with --html: a timeline of every seed, passing ones too")
	fl.StringVar(&f.broken, "broken-server", "", "put the target behind a proxy that breaks one guarantee ("+strings.Join(brokenVariants, ", ")+"): to see the checkers and the timeline catch a bug")
	_ = fl.MarkHidden("broken-server")
	addShrinkFlags(fl, &f.shrinkFlags)
}

// options are the run's sim.Options as the flags give them
// (f.seeds as settle leaves it; no Logf or Progress).
func (f conformanceFlags) options() sim.Options {
	return sim.Options{
		Seed: f.seed, Seeds: f.seeds, Windows: f.windows, Pages: f.pages, Devices: f.devices,
		Clients: f.clients, Others: othersOption(f.others), Parallel: f.parallel,
		Steps: f.steps, Faults: f.faults, OutDir: f.outDir, HTMLDir: f.htmlDir, HTMLAll: f.htmlAll, EchoTimeout: f.echoTimeout, SeedTimeout: f.seedTimeout, Trace: f.trace, Bursts: f.bursts,
		Choices: f.choices, ChoicesFile: f.choicesFile,
		Where: sim.Where{Server: f.server, Tokens: len(f.tokens), Instances: f.instances, Topology: f.topology, Broken: f.broken,
			RestartCommand: f.restartCmd, PostgresRestartCommand: f.pgRestartCmd},
	}
}

// othersOption is sim.Options.Others for --others n (0: none).
func othersOption(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}
