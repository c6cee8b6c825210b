package sim

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Where is the target of a run as its replay command names it: every
// kbkit conformance run flag that decides where a seed runs. The zero
// value is the embedded reference server with its defaults.
type Where struct {
	Server    string // --server URL ("" = the embedded reference server)
	Tokens    int    // how many --token flags (printed as placeholders, never the tokens)
	Instances int    // --instances of the embedded server (0 = the default)
	Topology  string // --topology of the embedded Postgres ("" = the default)
	Broken    string // --broken-server variant ("" = none)
	// RestartCommand and PostgresRestartCommand are --server's
	// --restart-command and --postgres-restart-command (they decide
	// whether --faults draws restarts).
	RestartCommand, PostgresRestartCommand string
}

// DefaultInstances is the CLI's default --instances.
const DefaultInstances = 2

// DefaultEchoTimeout is Options.EchoTimeout when it is zero.
const DefaultEchoTimeout = 10 * time.Second

// TokenPlaceholders are the environment variables a replay command names
// instead of n device tokens: $KBKIT_TOKEN for one, $KBKIT_TOKEN_1 ...
// $KBKIT_TOKEN_n for several.
func TokenPlaceholders(n int) []string {
	if n == 1 {
		return []string{"$KBKIT_TOKEN"}
	}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("$KBKIT_TOKEN_%d", i+1)
	}
	return out
}

// ReplayCommand is the kbkit command line that runs seed again as opts ran
// it: every flag that changes what the seed draws (the shape, faults,
// bursts, the clients, the choice file) or where it runs (server, tokens,
// restart commands, instances, topology, broken-server variant, timeouts). Every replay kbkit offers
// (text, JSON, JUnit, the timeline page, Go test logs) is this line.
// Tokens are shell variables (TokenPlaceholders), never the secrets.
func ReplayCommand(opts Options, seed int64) string {
	opts.defaults()
	args := []string{"kbkit", "conformance", "run", "--seed", fmt.Sprint(seed),
		"--steps", fmt.Sprint(opts.Steps), "--windows", fmt.Sprint(opts.Windows),
		"--pages", fmt.Sprint(opts.Pages), "--devices", fmt.Sprint(opts.Devices)}
	if opts.Faults {
		args = append(args, "--faults")
	}
	if opts.Bursts {
		args = append(args, "--bursts")
	}
	if o := opts.others(); len(opts.Clients) > 0 && o != 1 {
		args = append(args, "--others", fmt.Sprint(o))
	}
	for _, c := range opts.Clients {
		args = append(args, "--client", shellQuote(c))
	}
	if opts.ChoicesFile != "" {
		args = append(args, "--choices", shellQuote(opts.ChoicesFile))
	}
	w := opts.Where
	if w.Server != "" {
		args = append(args, "--server", shellQuote(w.Server))
		for _, p := range TokenPlaceholders(w.Tokens) {
			args = append(args, "--token", p)
		}
		if w.RestartCommand != "" {
			args = append(args, "--restart-command", shellQuote(w.RestartCommand))
		}
		if w.PostgresRestartCommand != "" {
			args = append(args, "--postgres-restart-command", shellQuote(w.PostgresRestartCommand))
		}
	} else {
		if w.Instances > 0 && w.Instances != DefaultInstances {
			args = append(args, "--instances", fmt.Sprint(w.Instances))
		}
		if w.Topology != "" && w.Topology != "single" {
			args = append(args, "--topology", shellQuote(w.Topology))
		}
	}
	if w.Broken != "" {
		args = append(args, "--broken-server", shellQuote(w.Broken))
	}
	if opts.EchoTimeout != DefaultEchoTimeout {
		args = append(args, "--echo-timeout", opts.EchoTimeout.String())
	}
	if opts.SeedTimeout != DefaultSeedTimeout {
		args = append(args, "--seed-timeout", opts.SeedTimeout.String())
	}
	return strings.Join(args, " ")
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// letters, digits and -_./:=@,+%.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@,+%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Rerun replays the recorded choices of rep, a failing seed run under
// opts, n times, one run at a time, and sets rep.Runs (the first run and
// the replays that ran) and rep.FailedRuns (those that failed a checker
// rep failed). Each replay drives target, or a target of its own when
// fresh is set (a broken server whose breakage depends on what it saw
// before must start over, as a replay's does). A replay that could not
// run is not counted; one that halts (Halt: the server stopped answering)
// ends the replays. A passing seed, one that could not run and one that
// halted are left as they are (a halted seed's replays would each wait
// out their deadline). The replays write no timeline or Porcupine page:
// the seed's own stay.
func Rerun(ctx context.Context, target Target, opts Options, rep *SeedReport, n int, fresh func() (Target, func(), error)) {
	if n <= 0 || rep.Err != "" || rep.Halt != "" || !rep.Failed() {
		return
	}
	o := opts
	o.Seeds, o.Parallel, o.Trace, o.Progress, o.Logf = 1, 1, false, nil, nil
	o.HTMLDir, o.HTMLAll, o.OutDir = "", false, ""
	o.Choices = rep.Choices
	rep.Runs, rep.FailedRuns = 1, 1
	for range n {
		if ctx.Err() != nil {
			return
		}
		t, stop := target, func() {}
		if fresh != nil {
			var err error
			if t, stop, err = fresh(); err != nil {
				return
			}
		}
		r := RunSeed(ctx, t, o, rep.Seed)
		stop()
		if r.Err != "" {
			continue
		}
		rep.Runs++
		if len(bothFailed(*rep, r).Checks) > 0 {
			rep.FailedRuns++
		}
		if r.Halt != "" {
			return
		}
	}
}

// RerunFailures reruns (Rerun) every failing seed of reports n times,
// opts.Parallel seeds at a time, each seed's replays one after another;
// none if a seed halted (the server stopped answering: the run stops).
func RerunFailures(ctx context.Context, target Target, opts Options, reports []SeedReport, n int, fresh func() (Target, func(), error)) {
	opts.defaults()
	for _, r := range reports {
		if r.Halt != "" {
			return
		}
	}
	slots := make(chan struct{}, opts.Parallel)
	var wg sync.WaitGroup
	for i := range reports {
		if n <= 0 || reports[i].Err != "" || !reports[i].Failed() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			Rerun(ctx, target, opts, &reports[i], n, fresh)
		}()
	}
	wg.Wait()
}
