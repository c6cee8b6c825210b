package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/subspace/kbkit/internal/syncio"

	"github.com/spf13/cobra"

	clientjs "github.com/subspace/kbkit/examples/client-js"
	"github.com/subspace/kbkit/spec"
	"github.com/subspace/kbkit/speckit/adapter"
	"github.com/subspace/kbkit/speckit/adapters"
	"github.com/subspace/kbkit/speckit/cases"
	"github.com/subspace/kbkit/speckit/report"
)

func newSpecCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "spec",
		Short: "Run kbkit's language-neutral spec cases, or export them",
	}
	cmd.AddCommand(newSpecRunCmd(), newSpecExportCmd(), newSpecShowCmd(), newSpecFuzzCmd(), newSpecMatrixCmd())
	return cmd
}

// specRunOptions are the flags of `kbkit spec run`.
type specRunOptions struct {
	impl    string
	suites  []string
	run     string
	expect  string
	junit   string
	json    string
	timeout time.Duration
	verbose bool
}

// knownSuites are the suites --suite accepts.
var knownSuites = cases.Suites

func newSpecRunCmd() *cobra.Command {
	var o specRunOptions
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
does ("unexpected pass"), so a partial implementation ratchets forward;
cases expected to be skipped are not run.

Exit status: 0 every case passed (or was skipped or failed as expected),
1 a case failed or passed unexpectedly, 2 a case errored (adapter crash,
timeout or protocol error; a bad case) or the run could not start.`,
		Example: `  kbkit spec run
  kbkit spec run --impl "kbkit adapter"
  kbkit spec run --impl "node speckit/adapters/node/adapter.mjs" \
      --expect speckit/adapters/node/expectations.yaml --junit junit.xml
  kbkit spec run --suite tokenizer --run 'tokenizer/label' spec/tokenizer.yaml`,
		RunE: func(c *cobra.Command, args []string) error {
			ctx := c.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			if code := runSpec(ctx, o, args, c.OutOrStdout(), c.ErrOrStderr()); code != exitOK {
				return exitError{Code: code}
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

// runSpec is `kbkit spec run`; it returns the exit code.
func runSpec(ctx context.Context, o specRunOptions, paths []string, stdout, rawStderr io.Writer) int {
	// The adapter's stderr is forwarded from another goroutine.
	stderr := &syncio.Writer{W: rawStderr}
	fail := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "kbkit spec run: "+format+"\n", args...)
		return exitErrored
	}
	all, err := cases.Open(paths...)
	if err != nil {
		return fail("%v", err)
	}

	// Select.
	for _, s := range o.suites {
		if !slices.Contains(knownSuites, s) {
			return fail("unknown suite %q (known: %s)", s, strings.Join(knownSuites, ", "))
		}
	}
	var idRE *regexp.Regexp
	if o.run != "" {
		if idRE, err = regexp.Compile(o.run); err != nil {
			return fail("--run: %v", err)
		}
	}
	var selected []cases.Case
	for _, c := range all {
		if len(o.suites) > 0 && !slices.Contains(o.suites, c.Suite()) {
			continue
		}
		if idRE != nil && !idRE.MatchString(c.ID) {
			continue
		}
		selected = append(selected, c)
	}

	var expect *report.Expectations
	if o.expect != "" {
		if expect, err = report.LoadExpectations(o.expect); err != nil {
			return fail("%v", err)
		}
	}

	// Reports.
	tapOut := stdout
	if o.json == "-" {
		tapOut = stderr
	}
	writers := []report.Writer{report.NewTAP(tapOut)}
	var closers []*os.File
	defer func() {
		for _, f := range closers {
			f.Close()
		}
	}()
	create := func(name string) (*os.File, error) {
		f, err := os.Create(name)
		if err == nil {
			closers = append(closers, f)
		}
		return f, err
	}
	if o.junit != "" {
		f, err := create(o.junit)
		if err != nil {
			return fail("--junit: %v", err)
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
			return fail("--json: %v", err)
		}
		writers = append(writers, report.NewJSON(f))
	}
	w := report.Multi(writers...)

	// Implementation.
	var impl cases.Impl = cases.Reference{}
	var client *adapter.Client
	if o.impl != "" {
		argv, err := adapter.SplitCommand(o.impl)
		if err != nil {
			return fail("--impl: %v", err)
		}
		self, _ := os.Executable()
		client, err = adapter.Start(ctx, argv, adapter.Options{Timeout: o.timeout, Stderr: stderr, Self: self})
		if err != nil {
			return fail("starting the adapter %q: %v", o.impl, err)
		}
		defer client.Close()
		info := client.Info()
		fmt.Fprintf(stderr, "kbkit spec run: adapter %s %s, suites: %s\n",
			info.Implementation, info.Version, strings.Join(info.Suites, ", "))
		impl = client
	}

	// Run.
	var sum report.Summary
	progress := report.NewProgress(rawStderr, len(selected))
	if err := w.Begin(len(selected)); err != nil {
		return fail("%v", err)
	}
	for i, c := range selected {
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
			return fail("writing the report: %v", err)
		}
		progress.Update(i+1, sum, c.ID)
	}
	progress.Clear()
	if err := w.End(sum); err != nil {
		return fail("writing the report: %v", err)
	}
	for _, f := range closers {
		if err := f.Close(); err != nil {
			return fail("%v", err)
		}
	}
	closers = nil

	for _, e := range expect.Unused() {
		if by := expect.ShadowedBy(e); by != nil {
			fmt.Fprintf(stderr, "kbkit spec run: %s:%d: expectation %q (%s) is never reached: the earlier %q (%s) on line %d matches it first (move the exact id above the glob, or drop it)\n",
				o.expect, e.Line, e.ID, e.Status, by.ID, by.Status, by.Line)
			continue
		}
		fmt.Fprintf(stderr, "kbkit spec run: %s:%d: expectation %q (%s) matched no case that ran\n", o.expect, e.Line, e.ID, e.Status)
	}
	if client != nil && client.Restarts() > 0 {
		fmt.Fprintf(stderr, "kbkit spec run: the adapter was restarted %d times\n", client.Restarts())
	}
	if o.verbose || sum.ExitCode() != exitOK {
		fmt.Fprintf(stderr, "kbkit spec run: %s\n", sum)
	}
	return sum.ExitCode()
}

func newSpecExportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "export DIR",
		Short: "Write the embedded spec (prose, case files, schemas, ADAPTER.md) to a directory",
		Long: `Writes every file of the spec embedded in this binary (the prose, the YAML
case files, the JSON Schemas, ADAPTER.md and EXPECTATIONS.md, the
TypeScript types in types/), the schema of expectations files
(schema/expectations.schema.json) and the adapters the prose links to
(adapters/node, adapters/typescript) into DIR, with the prose's links
pointing at those copies,
creating directories and overwriting files, so that implementations in
other languages can vendor the exact spec they are checked against.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			n, err := exportSpec(args[0])
			if err != nil {
				fmt.Fprintln(c.ErrOrStderr(), "kbkit spec export:", err)
				return exitError{Code: exitErrored}
			}
			fmt.Fprintf(c.ErrOrStderr(), "kbkit spec export: wrote %d files to %s\n", n, args[0])
			return nil
		},
	}
}

// expectationsSchemaPath is where export writes the expectations schema.
const expectationsSchemaPath = "schema/expectations.schema.json"

func exportSpec(dir string) (int, error) {
	n := 0
	write := func(name string, data []byte) error {
		dst := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		n++
		return os.WriteFile(dst, data, 0o644)
	}
	err := fs.WalkDir(spec.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(spec.FS, p)
		if err != nil {
			return err
		}
		if path.Ext(p) == ".md" {
			data = []byte(exportLinks.Replace(string(data)))
		}
		return write(p, data)
	})
	if err != nil {
		return n, err
	}
	if _, err := fs.Stat(spec.FS, expectationsSchemaPath); err != nil {
		if err := write(expectationsSchemaPath, adapters.ExpectationsSchema); err != nil {
			return n, err
		}
	}
	// The adapters the prose links to, under adapters/.
	err = fs.WalkDir(adapters.Examples, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(adapters.Examples, p)
		if err != nil {
			return err
		}
		// In the export the types sit at DIR/types, one level nearer than
		// spec/types is to speckit/adapters.
		data = []byte(exportTypeImports.Replace(string(data)))
		return write(exportedAdapters+p, data)
	})
	if err != nil {
		return n, err
	}
	// The reference client the client suite's prose links to.
	err = fs.WalkDir(clientjs.Files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(clientjs.Files, p)
		if err != nil {
			return err
		}
		return write(exportedClient+p, data)
	})
	return n, err
}

// exportedClient is where export writes the JavaScript reference client.
const exportedClient = "examples/client-js/"

// exportedAdapters is where export writes the adapters the prose links to.
const exportedAdapters = "adapters/"

// exportTypeImports points the adapters' imports of spec/types at the
// export's types/.
var exportTypeImports = strings.NewReplacer(
	`"../../../../spec/types/`, `"../../../types/`,
	`"../../../spec/types/`, `"../../types/`,
	`"../../../../examples/client-js/`, `"../../../`+exportedClient,
)

// exportLinks points the prose's links out of spec/ at the copies in the
// export: the expectations schema and the adapters.
var exportLinks = strings.NewReplacer(
	"](../speckit/adapters/expectations.schema.json)", "]("+expectationsSchemaPath+")",
	"](../speckit/adapters/", "]("+exportedAdapters,
	"](../examples/client-js/", "]("+exportedClient,
)
