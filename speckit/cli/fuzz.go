package cli

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/subspace/kbkit/internal/syncio"
	"github.com/subspace/kbkit/internal/version"

	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/internal/cliutil"
	"github.com/subspace/kbkit/speckit/adapter"
	"github.com/subspace/kbkit/speckit/fuzz"
	"github.com/subspace/kbkit/speckit/report"
)

// fuzzOptions are the flags of `kbkit spec fuzz`.
type fuzzOptions struct {
	impl       string
	suites     []string
	seed       uint64
	seedSet    bool
	count      int
	seconds    float64
	expect     string
	junit      string
	json       string
	timeout    time.Duration
	shrinkTime time.Duration
	maxDiffs   int
}

func newFuzzCmd() *cobra.Command {
	var o fuzzOptions
	cmd := &cobra.Command{
		Use:   "fuzz --impl CMD",
		Short: "Differential fuzzing: generated inputs sent to an adapter and to the reference; differences shrunk to cases",
		Long: `Draws inputs for every suite the adapter lists in init_ok (documents and
commands, valid, near-valid and malformed; Window scripts; plans; tokenizer
text and formulas with combining marks, bidi controls, code points next to
the surrogates and long runs), sends each to the adapter (spec/ADAPTER.md)
and compares its reply with the reference's the way ` + "`kbkit spec run`" + ` compares
it with a case. Every difference is shrunk to a minimal input and printed
as a case in the spec's format, its expected side the reference's reply,
ready to paste into a case file (one difference per area is shrunk; later
ones of the same area are counted).

The run is seeded and replayable: it prints its seed and, at the end, the
command line that replays it.

Each difference is printed with its signatures, one per part of the reply
that differs: the area, the command type (tokenizer: text or formula;
window: the kind of the first step that differs) and the field, e.g.
edit-text/fuzz:doc, tokenizer/fuzz:formula:deps, window/fuzz:echo:pending,
planner/fuzz:merge-page:effects. --expect reads an expectations file
(spec/EXPECTATIONS.md; one file may serve spec run and spec fuzz): a
difference whose every signature an entry with status fail or known_flaky
matches is counted, not reported, so one tracked bug is silenced and a new
one is not. An entry about fuzzing alone (its id holds "/fuzz") with
status fail that silenced nothing in a run of its suite is stale and fails
the run (the ratchet; known_flaky for a difference too rare to be met in
every run). Fuzzed cases are named <area>/fuzz-<hash>, so the globs of a
spec run's file ("move-node/*") apply too; an entry with status skip
keeps matching inputs from being sent. An entry that names no case and no
signature is refused before the run.

Exit status: 0 no difference (or only expected ones), 1 a difference or a
stale expectation, 2 the run could not start (no or blank --impl, an
adapter that does not start or keeps crashing, a bad flag or
expectations file).`,
		Example: `  kbkit spec fuzz --impl "kbkit adapter" --seconds 10
  kbkit spec fuzz --impl "node speckit/adapters/node/adapter.mjs" \
      --expect speckit/adapters/node/expectations.yaml --count 5000 --seed 1
  kbkit spec fuzz --impl "node speckit/adapters/node/adapter.mjs" --suite tokenizer \
      --seconds 60 --json fuzz.jsonl --junit junit.xml`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			o.seedSet = c.Flags().Changed("seed")
			if code := runSpecFuzz(commandContext(c), o, c.OutOrStdout(), c.ErrOrStderr()); code != cliutil.ExitOK {
				return cliutil.ExitError{Code: code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.impl, "impl", "", `the adapter to fuzz: a command line, split like a shell would (required; "kbkit adapter" is the reference)`)
	f.StringSliceVar(&o.suites, "suite", nil, "fuzz only these suites (repeatable or comma-separated: "+strings.Join(knownSuites, ", ")+"; default: every suite the adapter lists)")
	f.Uint64Var(&o.seed, "seed", 0, "the seed (default: a random one, printed)")
	f.IntVar(&o.count, "count", 0, "stop after this many inputs")
	f.Float64Var(&o.seconds, "seconds", 0, "stop after this many seconds (default 10 when --count is not given)")
	f.StringVar(&o.expect, "expect", "", "expectations file (spec/EXPECTATIONS.md): difference signatures expected or known to be flaky, inputs to skip")
	f.StringVar(&o.junit, "junit", "", "also write a JUnit XML report to this file")
	f.StringVar(&o.json, "json", "", "also write one JSON object per difference and per suite to this file (- = stdout; the text report then goes to stderr)")
	f.DurationVar(&o.timeout, "timeout", 5*time.Second, "per-request timeout; a timed-out adapter is restarted")
	f.DurationVar(&o.shrinkTime, "shrink-time", 30*time.Second, "how long to shrink each difference at most")
	f.IntVar(&o.maxDiffs, "max-differences", 0, "stop once this many differences were found and shrunk (0: no limit)")
	return cmd
}

// runSpecFuzz is `kbkit spec fuzz`; it returns the exit code.
func runSpecFuzz(ctx context.Context, o fuzzOptions, stdout, rawStderr io.Writer) int {
	stderr := &syncio.Writer{W: rawStderr}
	fail := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "kbkit spec fuzz: "+format+"\n", args...)
		return cliutil.ExitErrored
	}
	argv, expect, err := checkFuzzFlags(&o)
	if err != nil {
		return fail("%v", err)
	}

	text := stdout
	if o.json == "-" {
		text = stderr
	}
	writers, files, err := fuzzReports(o, stdout)
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	if err != nil {
		return fail("%v", err)
	}

	self, _ := os.Executable()
	// Shrinking a crash replays inputs that crash the adapter again, so a
	// run tolerates more failures in a row than `spec run` does.
	client, err := adapter.Start(ctx, argv, adapter.Options{Timeout: o.timeout, Stderr: stderr, Self: self, MaxFailures: 20})
	if err != nil {
		return fail("starting the adapter %q: %v", o.impl, err)
	}
	defer client.Close()
	info := client.Info()
	known := fuzzSuites(info, o.suites, stderr)
	if len(known) == 0 {
		return fail("nothing to fuzz: the adapter lists suites [%s]", strings.Join(info.Suites, ", "))
	}
	fmt.Fprintln(text, version.Line()) // what TAP's header comment says
	fmt.Fprintf(text, "kbkit spec fuzz: adapter %s %s; suites %s; seed %d\n",
		info.Implementation, info.Version, strings.Join(known, ", "), o.seed)

	w := report.Multi(writers...)
	found := 0
	if err := w.Begin(0); err != nil {
		return fail("%v", err)
	}
	rep, err := fuzz.Run(ctx, fuzz.Options{
		Impl: client, Suites: known, Commands: info.Commands, Seed: o.seed, Count: o.count,
		Duration: time.Duration(o.seconds * float64(time.Second)), Expect: expect,
		ShrinkTime: o.shrinkTime, MaxDifferences: o.maxDiffs,
		OnDifference: func(d *fuzz.Difference) {
			found++
			fuzz.WriteDifference(text, found, d)
		},
	})
	switch {
	case rep != nil && errors.Is(err, context.Canceled):
		fmt.Fprintf(text, "kbkit spec fuzz: interrupted after %d inputs\n", rep.Inputs)
	case err != nil:
		return fail("%v", err)
	}
	judged := rep.JudgeExpectations(expect)
	if err := rep.WriteResults(w, judged); err != nil {
		return fail("writing the report: %v", err)
	}
	for _, f := range files {
		if err := f.Close(); err != nil {
			return fail("%v", err)
		}
	}
	files = nil
	fuzz.WriteSummary(text, rep)
	if client.Restarts() > 0 {
		fmt.Fprintf(text, "the adapter was restarted %d times\n", client.Restarts())
	}
	stale := false
	for _, j := range judged {
		fmt.Fprintf(text, "expectation %q: %s\n", j.ID, j.Message)
		stale = stale || j.Verdict == report.VerdictUnexpectedPass
	}
	fmt.Fprintf(text, "replay: %s\n", replayLine(o, rep))
	if len(rep.Differences) > 0 || stale {
		return cliutil.ExitFailed
	}
	return cliutil.ExitOK
}

// replayLine is the command line that draws the same inputs again.
func replayLine(o fuzzOptions, rep *fuzz.Report) string {
	args := []string{"kbkit", "spec", "fuzz", "--impl", shellQuote(o.impl),
		"--seed", strconv.FormatUint(o.seed, 10), "--count", strconv.Itoa(rep.Inputs)}
	if len(o.suites) > 0 {
		args = append(args, "--suite", strings.Join(o.suites, ","))
	}
	if o.expect != "" {
		args = append(args, "--expect", shellQuote(o.expect))
	}
	if o.maxDiffs > 0 {
		args = append(args, "--max-differences", strconv.Itoa(o.maxDiffs))
	}
	return strings.Join(args, " ")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// fuzzReports opens the --junit and --json reports.
func fuzzReports(o fuzzOptions, stdout io.Writer) ([]report.Writer, []*os.File, error) {
	var writers []report.Writer
	var files []*os.File
	for _, r := range []struct{ flag, path string }{{"--junit", o.junit}, {"--json", o.json}} {
		if r.path == "" {
			continue
		}
		var out io.Writer = stdout
		if r.path != "-" || r.flag == "--junit" {
			f, err := os.Create(r.path)
			if err != nil {
				return writers, files, fmt.Errorf("%s: %w", r.flag, err)
			}
			files = append(files, f)
			out = f
		}
		if r.flag == "--junit" {
			writers = append(writers, report.NewJUnit(out, "kbkit spec fuzz"))
		} else {
			writers = append(writers, report.NewJSON(out))
		}
	}
	return writers, files, nil
}

// fuzzSuites are the suites to fuzz: those the adapter lists (and kbkit
// knows), narrowed to --suite.
func fuzzSuites(info adapter.Info, want []string, stderr io.Writer) []string {
	var out []string
	for _, s := range knownSuites {
		switch {
		case !info.Supports(s):
			if slices.Contains(want, s) {
				fmt.Fprintf(stderr, "kbkit spec fuzz: the adapter does not list suite %s; not fuzzed\n", s)
			}
		case len(want) == 0 || slices.Contains(want, s):
			out = append(out, s)
		}
	}
	return out
}

// checkFuzzFlags validates the flags, fills in the defaults (10 s when no
// count is given, a random seed) and reads --impl and --expect.
func checkFuzzFlags(o *fuzzOptions) ([]string, *report.Expectations, error) {
	if strings.TrimSpace(o.impl) == "" {
		return nil, nil, errors.New(`--impl is required: the adapter command line to fuzz (for example --impl "kbkit adapter")`)
	}
	argv, err := adapter.SplitCommand(o.impl)
	if err != nil {
		return nil, nil, fmt.Errorf("--impl: %w", err)
	}
	if len(argv) == 0 {
		return nil, nil, fmt.Errorf("--impl %q holds no command", o.impl)
	}
	for _, s := range o.suites {
		if !slices.Contains(knownSuites, s) {
			return nil, nil, fmt.Errorf("unknown suite %q (known: %s)", s, strings.Join(knownSuites, ", "))
		}
	}
	if o.count < 0 || o.seconds < 0 {
		return nil, nil, errors.New("--count and --seconds must not be negative")
	}
	if o.count == 0 && o.seconds == 0 {
		o.seconds = 10
	}
	var expect *report.Expectations
	if o.expect != "" {
		if expect, err = loadSpecExpect(o.expect, nil); err != nil {
			return nil, nil, err
		}
	}
	if !o.seedSet {
		var b [8]byte
		_, _ = rand.Read(b[:])
		o.seed = binary.LittleEndian.Uint64(b[:]) >> 1
	}
	return argv, expect, nil
}
