package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/conformance/cases"
	"github.com/subspace/kbkit/spec"
)

func newSpecCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "spec",
		Short: "Run kbkit's language-neutral spec cases",
	}
	cmd.AddCommand(newSpecRunCmd())
	return cmd
}

func newSpecRunCmd() *cobra.Command {
	var verbose bool
	cmd := &cobra.Command{
		Use:   "run [PATH...]",
		Short: "Check case files or directories (default: the built-in spec) against the reference reducer",
		Long: `Runs every case of the given YAML case files or directories (default: the
spec embedded in this binary) and prints one line per failing case with a
diff ("-" expected, "+" got). Exit status: 0 all pass, 1 a case failed,
2 a case file could not be read or a case could not be checked.`,
		RunE: func(c *cobra.Command, args []string) error {
			var files []cases.File
			var err error
			if len(args) == 0 {
				files, err = cases.LoadFS(spec.FS, ".")
			} else {
				files, err = cases.LoadPaths(args)
			}
			if err != nil {
				fmt.Fprintln(c.ErrOrStderr(), "kbkit spec run:", err)
				return exitError{exitErrored}
			}
			all, err := cases.All(files)
			if err != nil {
				fmt.Fprintln(c.ErrOrStderr(), "kbkit spec run:", err)
				return exitError{exitErrored}
			}
			code := report(c.Context(), c.OutOrStdout(), all, verbose)
			if code != exitOK {
				return exitError{code}
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "also print passing cases")
	return cmd
}

func report(ctx context.Context, w io.Writer, all []cases.Case, verbose bool) int {
	if ctx == nil {
		ctx = context.Background()
	}
	counts := map[cases.Status]int{}
	for _, c := range all {
		o := cases.Check(ctx, cases.Reference{}, c)
		counts[o.Status]++
		switch {
		case o.Status == cases.Fail || o.Status == cases.Error:
			fmt.Fprintf(w, "%s %s (%s:%d)\n", strings.ToUpper(string(o.Status)), o.ID, o.File, o.Line)
			for _, line := range strings.Split(strings.TrimRight(o.Diff, "\n"), "\n") {
				fmt.Fprintf(w, "    %s\n", line)
			}
		case verbose:
			fmt.Fprintf(w, "%s %s\n", strings.ToUpper(string(o.Status)), o.ID)
		}
	}
	fmt.Fprintf(w, "%d cases: %d passed, %d failed, %d errored, %d skipped\n",
		len(all), counts[cases.Pass], counts[cases.Fail], counts[cases.Error], counts[cases.Skip])
	switch {
	case counts[cases.Error] > 0:
		return exitErrored
	case counts[cases.Fail] > 0:
		return exitFailed
	}
	return exitOK
}
