package cli

import (
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/internal/cliutil"
	"github.com/subspace/kbkit/internal/fileout"
	"github.com/subspace/kbkit/spec"
	"github.com/subspace/kbkit/speckit/cases"
	"github.com/subspace/kbkit/speckit/coverage"
)

// coverageOptions are the flags of `kbkit spec coverage`.
type coverageOptions struct {
	specDir   string
	uncovered bool
	json      string
}

func newCoverageCmd() *cobra.Command {
	var o coverageOptions
	cmd := &cobra.Command{
		Use:   "coverage",
		Short: "List every requirement of the spec's prose and the cases, checks and checkers that test it",
		Long: `Lists every requirement of spec/*.md (each normative sentence and rule-table
row carries a tag [req: ID], spec/README.md "Requirement ids") with its
level (MUST or SHOULD), where it is, and what tests it: the spec cases
(kbkit spec run), the protocol checks (kbkit conformance protocol) and the
simulator checkers (kbkit conformance run) that declare it, or the reason
spec/waivers.yaml gives for leaving it untested. --uncovered lists only
the requirements neither tested nor waived.

A SHOULD nothing tests is listed but does not fail the command; a MUST
does. --spec reads another spec directory (its *.md, waivers.yaml and case
files) instead of the built-in spec.

Exit status: 0 every MUST tested or waived, 1 a MUST neither tested nor
waived, 2 bad input: a normative sentence without a tag, an id tagged
twice, a check, case rule or waiver naming an unknown requirement.`,
		Example: `  kbkit spec coverage --uncovered
  kbkit spec coverage --json coverage.json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			code := runCoverage(o, c.OutOrStdout(), c.ErrOrStderr())
			if code != cliutil.ExitOK {
				return cliutil.ExitError{Code: code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.specDir, "spec", "", "read this spec directory instead of the built-in spec")
	f.BoolVar(&o.uncovered, "uncovered", false, "list only the requirements neither tested nor waived")
	f.StringVar(&o.json, "json", "", "also write the report as JSON to this file (- = stdout; the text then goes to stderr)")
	return cmd
}

// runCoverage builds the coverage report and returns the exit status.
func runCoverage(o coverageOptions, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintln(stderr, "kbkit spec coverage:", err)
		return cliutil.ExitErrored
	}
	var fsys fs.FS = spec.FS
	var all []cases.Case
	var err error
	if o.specDir != "" {
		if _, err := os.Stat(o.specDir); err != nil {
			return fail(err)
		}
		fsys = os.DirFS(o.specDir)
		all, err = cases.Open(o.specDir)
	} else {
		all, err = cases.Open()
	}
	if err != nil {
		return fail(err)
	}
	rep, err := coverage.Build(fsys, coverage.Kit(all))
	if err != nil {
		return fail(err)
	}
	text := stdout
	switch o.json {
	case "":
	case "-":
		text = stderr
		if err := rep.WriteJSON(stdout, o.uncovered); err != nil {
			return fail(err)
		}
	default:
		if err := fileout.Write(o.json, func(w io.Writer) error { return rep.WriteJSON(w, o.uncovered) }); err != nil {
			return fail(fmt.Errorf("--json: %v", err))
		}
	}
	if err := rep.WriteText(text, o.uncovered); err != nil {
		return fail(err)
	}
	if n := len(rep.Uncovered(coverage.MUST)); n > 0 {
		fmt.Fprintf(stderr, "kbkit spec coverage: %d MUST requirement(s) neither tested nor waived\n", n)
		return cliutil.ExitFailed
	}
	return cliutil.ExitOK
}
