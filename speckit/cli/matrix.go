package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/subspace/kbkit/internal/fileout"

	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/internal/cliutil"
	"github.com/subspace/kbkit/speckit/matrix"
)

type matrixOptions struct {
	impls, expects, results []string
	reference               bool
	html, json, badges      string
	compare                 string
	timeout                 time.Duration
}

func newMatrixCmd() *cobra.Command {
	var o matrixOptions
	cmd := &cobra.Command{
		Use:   "matrix [PATH...]",
		Short: "Run the spec over several implementations (or merge their --json results) into one results matrix",
		Long: `Runs kbkit spec run for each --impl NAME=COMMAND (with its --expect
NAME=FILE, if any) and --reference (the built-in reference, named
"reference"), reads each --results NAME=FILE (a spec run --json file of an
earlier run), and merges them into one results matrix: implementations by
suites with passed/cases and what failed, errored, passed unexpectedly,
was expected to fail or was skipped, and a tier per implementation:

  complete    every case of the spec passes: no failure, no expected
              failure, no skip
  compatible  every case of the commands and window suites passes; the
              other suites may fail as the expectations file says
  partial     nothing fails beyond what its expectations file declares
  failing     a case failed, errored or passed unexpectedly
  not run     the implementation could not be started

The table goes to stdout. --html writes one self-contained page (every
case that did not pass, with its diff and input, a click away from its
cell); --json the matrix as JSON, which a later --compare reads to list
what changed (new failures first); --badges DIR a shields.io endpoint
file per implementation (DIR/NAME.json: tier and cases passed), for a
README badge: https://img.shields.io/endpoint?url=<where DIR/NAME.json is served>.

Exit status: 0 every implementation is partial or better, 1 one is
failing, 2 one could not run (or bad flags). The outputs are written in
every case.`,
		Example: `  kbkit spec matrix --reference \
      --impl "node=node speckit/adapters/node/adapter.mjs" \
      --expect node=speckit/adapters/node/expectations.yaml \
      --html matrix.html --json matrix.json --badges badges/
  kbkit spec run --impl "node speckit/adapters/broken/adapter.mjs" --json broken.json
  kbkit spec matrix --reference --results broken=broken.json --compare matrix.json`,
		RunE: func(c *cobra.Command, args []string) error {
			if code := runMatrix(commandContext(c), o, args, c.OutOrStdout(), c.ErrOrStderr()); code != cliutil.ExitOK {
				return cliutil.ExitError{Code: code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.impls, "impl", nil, "an implementation: NAME=COMMAND, the adapter command line as for spec run --impl (repeat)")
	f.StringArrayVar(&o.expects, "expect", nil, "NAME=FILE: the expectations file of implementation NAME (repeat)")
	f.StringArrayVar(&o.results, "results", nil, "NAME=FILE: merge a spec run --json file instead of running (repeat)")
	f.BoolVar(&o.reference, "reference", false, `also run the built-in reference implementation (row "reference")`)
	f.StringVar(&o.html, "html", "", "write the matrix as a self-contained HTML page to this file")
	f.StringVar(&o.json, "json", "", "write the matrix as JSON to this file (- = stdout; the table then goes to stderr)")
	f.StringVar(&o.badges, "badges", "", "write a shields.io endpoint JSON per implementation to DIR/NAME.json")
	f.StringVar(&o.compare, "compare", "", "an earlier --json matrix: list what changed, new failures first")
	f.DurationVar(&o.timeout, "timeout", 10*time.Second, "per-request timeout of an adapter")
	return cmd
}

// implName is what a row may be called: it names a badge file.
var implName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// splitNamed parses NAME=VALUE.
func splitNamed(flag, s string) (name, value string, err error) {
	name, value, ok := strings.Cut(s, "=")
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	switch {
	case !ok:
		return "", "", fmt.Errorf("--%s %q: want NAME=VALUE", flag, s)
	case !implName.MatchString(name):
		return "", "", fmt.Errorf("--%s %q: the name must be letters, digits, '.', '_' or '-'", flag, s)
	case value == "":
		return "", "", fmt.Errorf("--%s %q: the value after %s= is empty", flag, s, name)
	}
	return name, value, nil
}

// matrixRun is one row to fill: run (impl, or the reference when impl is
// "") or read (results).
type matrixRun struct {
	name, impl, expect, results string
	reference                   bool
}

func planMatrix(o matrixOptions) ([]matrixRun, error) {
	var runs []matrixRun
	seen := map[string]int{}
	add := func(r matrixRun) error {
		if _, dup := seen[r.name]; dup {
			return fmt.Errorf("two implementations are named %q", r.name)
		}
		seen[r.name] = len(runs)
		runs = append(runs, r)
		return nil
	}
	if o.reference {
		if err := add(matrixRun{name: "reference", reference: true}); err != nil {
			return nil, err
		}
	}
	for _, s := range o.impls {
		name, cmd, err := splitNamed("impl", s)
		if err != nil {
			return nil, err
		}
		if err := add(matrixRun{name: name, impl: cmd}); err != nil {
			return nil, err
		}
	}
	for _, s := range o.results {
		name, file, err := splitNamed("results", s)
		if err != nil {
			return nil, err
		}
		if err := add(matrixRun{name: name, results: file}); err != nil {
			return nil, err
		}
	}
	for _, s := range o.expects {
		name, file, err := splitNamed("expect", s)
		if err != nil {
			return nil, err
		}
		i, ok := seen[name]
		switch {
		case !ok:
			return nil, fmt.Errorf("--expect %s=...: no --impl or --reference is named %q", name, name)
		case runs[i].results != "":
			return nil, fmt.Errorf("--expect %s=...: %q is a --results file, judged when it was run", name, name)
		case runs[i].expect != "":
			return nil, fmt.Errorf("--expect: two files for %q", name)
		}
		runs[i].expect = file
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("no implementation: give --reference, --impl NAME=COMMAND or --results NAME=FILE")
	}
	return runs, nil
}

// runMatrix is `kbkit spec matrix`; it returns the exit code.
func runMatrix(ctx context.Context, o matrixOptions, paths []string, stdout, stderr io.Writer) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "kbkit spec matrix: "+format+"\n", args...)
		return cliutil.ExitErrored
	}
	runs, err := planMatrix(o)
	if err != nil {
		return fail("%v", err)
	}
	var old *matrix.Matrix
	if o.compare != "" {
		if old, err = readMatrix(o.compare); err != nil {
			return fail("--compare: %v", err)
		}
	}
	tmp, err := os.MkdirTemp("", "kbkit-matrix-")
	if err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(tmp)

	var impls []matrix.Impl
	for i, r := range runs {
		im := matrix.Impl{Name: r.name, Source: r.impl, Expect: r.expect}
		file := r.results
		if r.results == "" {
			if r.reference {
				im.Source = "the built-in reference"
			}
			file = filepath.Join(tmp, fmt.Sprintf("%d.json", i))
			var why bytes.Buffer
			fmt.Fprintf(stderr, "kbkit spec matrix: %s: %s\n", r.name, describeRun(r))
			code := runSpec(ctx, runOptions{impl: r.impl, expect: r.expect, json: file, timeout: o.timeout},
				paths, io.Discard, io.MultiWriter(stderr, &why))
			if code == cliutil.ExitErrored {
				im.Err = lastLine(why.String())
			}
		} else {
			im.Source = r.results
		}
		if f, err := os.Open(file); err == nil {
			recs, rerr := matrix.ReadRecords(f)
			f.Close()
			switch {
			case rerr == nil:
				im.Records, im.Err = recs, ""
			case im.Err == "":
				im.Err = rerr.Error()
			}
		} else if im.Err == "" {
			im.Err = err.Error()
		}
		impls = append(impls, im)
		if ctx.Err() != nil {
			return fail("interrupted")
		}
	}
	m := matrix.Build(impls)
	if old != nil {
		m.Compare(old, o.compare)
	}
	table := stdout
	if o.json == "-" {
		table = stderr
	}
	if err := m.Text(table); err != nil {
		return fail("%v", err)
	}
	if err := writeMatrixOutputs(m, o, stdout); err != nil {
		return fail("%v", err)
	}
	code := cliutil.ExitOK
	for _, r := range m.Rows {
		switch {
		case r.Err != "":
			code = cliutil.ExitErrored
		case r.Tier == matrix.TierFailing.Name && code == cliutil.ExitOK:
			code = cliutil.ExitFailed
		}
	}
	return code
}

func describeRun(r matrixRun) string {
	s := "kbkit spec run"
	if r.impl != "" {
		s += fmt.Sprintf(" --impl %q", r.impl)
	}
	if r.expect != "" {
		s += fmt.Sprintf(" --expect %s", r.expect)
	}
	if r.reference {
		s += " (the built-in reference)"
	}
	return s
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimPrefix(lines[len(lines)-1], "kbkit spec run: ")
}

func readMatrix(path string) (*matrix.Matrix, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return matrix.ReadJSON(f)
}

// writeMatrixOutputs writes --html, --json and --badges.
func writeMatrixOutputs(m *matrix.Matrix, o matrixOptions, stdout io.Writer) error {
	if o.html != "" {
		if err := fileout.Write(o.html, func(w io.Writer) error { return m.HTML(w) }); err != nil {
			return fmt.Errorf("--html: %v", err)
		}
	}
	switch o.json {
	case "":
	case "-":
		if err := m.WriteJSON(stdout); err != nil {
			return err
		}
	default:
		if err := fileout.Write(o.json, m.WriteJSON); err != nil {
			return fmt.Errorf("--json: %v", err)
		}
	}
	if o.badges != "" {
		if err := os.MkdirAll(o.badges, 0o755); err != nil {
			return fmt.Errorf("--badges: %v", err)
		}
		for _, r := range m.Rows {
			b, _ := json.Marshal(matrix.Badge(r))
			if err := os.WriteFile(filepath.Join(o.badges, r.Name+".json"), append(b, '\n'), 0o644); err != nil {
				return fmt.Errorf("--badges: %v", err)
			}
		}
	}
	return nil
}
