package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/subspace/kbkit/internal/syncio"

	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/internal/cliutil"
	"github.com/subspace/kbkit/speckit/adapter"
	"github.com/subspace/kbkit/speckit/cases"
	"github.com/subspace/kbkit/speckit/fuzz"
	"github.com/subspace/kbkit/speckit/report"
)

// runOptions are the flags of `kbkit spec run`.
type runOptions struct {
	impl    string
	suites  []string
	run     string
	expect  string
	junit   string
	json    string
	timeout time.Duration
	verbose bool
}

func newRunCmd() *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run [PATH...]",
		Short: "Check case files or directories (default: the built-in spec) against the reference or an adapter",
		Long: `Runs every case of the given YAML case files or directories (default: the
spec embedded in this binary) against kbkit's reference implementation, or,
with --impl, against an adapter process speaking the protocol of
spec/ADAPTER.md (for example --impl "node adapter.mjs").

The report is TAP version 14 on stdout: one test point per case, named by
the case id; a failing case has a YAML block with its file, line, diff
("-" expected, "+" got) and input (the request sent: the document and
command, the text, the window script or the pages). --junit and --json also write JUnit XML and JSON
lines (one object per case). kbkit spec show ID prints one case's request
and the reply the reference gives to it.

--expect reads an expectations file (spec/EXPECTATIONS.md): cases expected
to fail are reported as TODO and do not fail the run, but one that passes
does ("unexpected pass": the entry is stale), so a partial implementation
ratchets forward; known_flaky cases may fail or pass; cases expected to be
skipped are not run. An entry that names no case (of the built-in spec or
the given files) nor a spec fuzz signature is refused before the run.

Exit status: 0 every case passed (or was skipped or failed as expected),
1 a case failed or passed unexpectedly, 2 a case errored (adapter crash,
timeout or protocol error; a bad case) or the run could not start.`,
		Example: `  kbkit spec run
  kbkit spec run --impl "kbkit adapter"
  kbkit spec run --impl "node speckit/adapters/node/adapter.mjs" \
      --expect speckit/adapters/node/expectations.yaml --junit junit.xml
  kbkit spec run --suite tokenizer --run 'tokenizer/label' spec/tokenizer.yaml`,
		RunE: func(c *cobra.Command, args []string) error {
			if code := runSpec(commandContext(c), o, args, c.OutOrStdout(), c.ErrOrStderr()); code != cliutil.ExitOK {
				return cliutil.ExitError{Code: code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.impl, "impl", "", `run the cases through an adapter: a command line, split like a shell would ("kbkit adapter" serves the reference)`)
	f.StringSliceVar(&o.suites, "suite", nil, "run only these suites (repeatable or comma-separated: "+strings.Join(knownSuites, ", ")+")")
	f.StringVar(&o.run, "run", "", "run only the cases whose id matches this regular expression")
	f.StringVar(&o.expect, "expect", "", "expectations file: case ids or globs expected to fail or to be skipped")
	f.StringVar(&o.junit, "junit", "", "also write a JUnit XML report to this file")
	f.StringVar(&o.json, "json", "", "also write one JSON object per case to this file (- = stdout; TAP then goes to stderr)")
	f.DurationVar(&o.timeout, "timeout", 10*time.Second, "per-request timeout for --impl; a timed-out adapter is restarted")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "print a summary line on stderr too")
	return cmd
}

// runSpec is `kbkit spec run`; it returns the exit status.
func runSpec(ctx context.Context, o runOptions, paths []string, stdout, rawStderr io.Writer) int {
	// The adapter's stderr is forwarded from another goroutine.
	stderr := &syncio.Writer{W: rawStderr}
	fail := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "kbkit spec run: "+format+"\n", args...)
		return cliutil.ExitErrored
	}
	selected, all, err := selectCases(o, paths)
	if err != nil {
		return fail("%v", err)
	}
	var expect *report.Expectations
	if o.expect != "" {
		if expect, err = loadSpecExpect(o.expect, all); err != nil {
			return fail("%v", err)
		}
	}
	out, err := openRunReports(o, stdout, stderr)
	defer out.close()
	if err != nil {
		return fail("%v", err)
	}
	impl, client, err := startImpl(ctx, o, stderr)
	if err != nil {
		return fail("%v", err)
	}
	if client != nil {
		defer client.Close()
	}
	sum, err := checkCases(ctx, impl, selected, expect, out.w, rawStderr)
	if err != nil {
		return fail("%v", err)
	}
	if err := out.closeFiles(); err != nil {
		return fail("%v", err)
	}
	noteUnusedExpectations(stderr, o.expect, expect)
	if client != nil && client.Restarts() > 0 {
		fmt.Fprintf(stderr, "kbkit spec run: the adapter was restarted %d times\n", client.Restarts())
	}
	if o.verbose || sum.ExitCode() != cliutil.ExitOK {
		fmt.Fprintf(stderr, "kbkit spec run: %s\n", sum)
	}
	return sum.ExitCode()
}

// selectCases reads the case files at paths (none: the built-in spec) and
// keeps the cases of --suite whose ids match --run; all are those read.
func selectCases(o runOptions, paths []string) (selected, all []cases.Case, err error) {
	all, err = cases.Open(paths...)
	if err != nil {
		return nil, nil, err
	}
	for _, s := range o.suites {
		if !slices.Contains(knownSuites, s) {
			return nil, nil, fmt.Errorf("unknown suite %q (known: %s)", s, strings.Join(knownSuites, ", "))
		}
	}
	var idRE *regexp.Regexp
	if o.run != "" {
		if idRE, err = regexp.Compile(o.run); err != nil {
			return nil, nil, fmt.Errorf("--run: %v", err)
		}
	}
	for _, c := range all {
		if len(o.suites) > 0 && !slices.Contains(o.suites, c.Suite()) {
			continue
		}
		if idRE != nil && !idRE.MatchString(c.ID) {
			continue
		}
		selected = append(selected, c)
	}
	return selected, all, nil
}

// runReports are a run's report writers (TAP, and --junit and --json) and
// the files they write.
type runReports struct {
	w     report.Writer
	files []*os.File
}

// openRunReports opens the reports: TAP on stdout (on stderr when --json
// is "-"), --junit and --json.
func openRunReports(o runOptions, stdout, stderr io.Writer) (*runReports, error) {
	out := &runReports{}
	tapOut := stdout
	if o.json == "-" {
		tapOut = stderr
	}
	writers := []report.Writer{report.NewTAP(tapOut)}
	create := func(name string) (*os.File, error) {
		f, err := os.Create(name)
		if err == nil {
			out.files = append(out.files, f)
		}
		return f, err
	}
	if o.junit != "" {
		f, err := create(o.junit)
		if err != nil {
			return out, fmt.Errorf("--junit: %v", err)
		}
		writers = append(writers, report.NewJUnit(f, "kbkit spec"))
	}
	switch o.json {
	case "":
	case "-":
		writers = append(writers, report.NewJSON(stdout))
	default:
		f, err := create(o.json)
		if err != nil {
			return out, fmt.Errorf("--json: %v", err)
		}
		writers = append(writers, report.NewJSON(f))
	}
	out.w = report.Multi(writers...)
	return out, nil
}

// closeFiles closes the report files, stopping at the first error (close
// then closes the rest).
func (r *runReports) closeFiles() error {
	for _, f := range r.files {
		if err := f.Close(); err != nil {
			return err
		}
	}
	r.files = nil
	return nil
}

// close closes whatever report file is still open.
func (r *runReports) close() {
	for _, f := range r.files {
		f.Close()
	}
}

// startImpl is the implementation the cases run against: the reference,
// or with --impl the adapter it starts (the client to close).
func startImpl(ctx context.Context, o runOptions, stderr io.Writer) (cases.Impl, *adapter.Client, error) {
	if o.impl == "" {
		return cases.Reference{}, nil, nil
	}
	argv, err := adapter.SplitCommand(o.impl)
	if err != nil {
		return nil, nil, fmt.Errorf("--impl: %v", err)
	}
	self, _ := os.Executable()
	client, err := adapter.Start(ctx, argv, adapter.Options{Timeout: o.timeout, Stderr: stderr, Self: self})
	if err != nil {
		return nil, nil, fmt.Errorf("starting the adapter %q: %v", o.impl, err)
	}
	info := client.Info()
	fmt.Fprintf(stderr, "kbkit spec run: adapter %s %s, protocol %d, suites: %s\n",
		info.Implementation, info.Version, info.Protocol, strings.Join(info.Suites, ", "))
	return client, client, nil
}

// checkCases checks each case against impl (or skips it as expect says),
// writes its result to w and shows the progress on progressOut.
func checkCases(ctx context.Context, impl cases.Impl, selected []cases.Case, expect *report.Expectations,
	w report.Writer, progressOut io.Writer) (report.Summary, error) {
	var sum report.Summary
	progress := report.NewProgress(progressOut, len(selected))
	if err := w.Begin(len(selected)); err != nil {
		return sum, err
	}
	budget, _ := impl.(interface{ SetBudget(string) })
	for i, c := range selected {
		if budget != nil {
			budget.SetBudget(c.Suite()) // one crashing suite does not error the others
		}
		var r report.Result
		if e := expect.Match(c.ID); e != nil && e.Status == report.ExpectSkip {
			r = report.NotRun(c, e)
		} else {
			start := time.Now()
			r = report.Judge(cases.Check(ctx, impl, c), e)
			r.Duration = time.Since(start)
			r.Description = c.Description
		}
		sum.Add(r)
		progress.Clear()
		if err := w.Result(i+1, r); err != nil {
			return sum, fmt.Errorf("writing the report: %v", err)
		}
		progress.Update(i+1, sum, c.ID)
	}
	progress.Clear()
	if err := w.End(sum); err != nil {
		return sum, fmt.Errorf("writing the report: %v", err)
	}
	return sum, nil
}

// noteUnusedExpectations names each expectation of the file at path that
// matched no case that ran, and why.
func noteUnusedExpectations(stderr io.Writer, path string, expect *report.Expectations) {
	for _, e := range expect.Unused() {
		if fuzz.IsFuzzEntry(e) {
			continue // spec fuzz's
		}
		if by := expect.ShadowedBy(e); by != nil {
			fmt.Fprintf(stderr, "kbkit spec run: %s:%d: expectation %q (%s) is never reached: the earlier %q (%s) on line %d matches it first (move the exact id above the glob, or drop it)\n",
				path, e.Line, e.ID, e.Status, by.ID, by.Status, by.Line)
			continue
		}
		fmt.Fprintf(stderr, "kbkit spec run: %s:%d: expectation %q (%s) matched no case that ran\n", path, e.Line, e.ID, e.Status)
	}
}
