package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/subspace/kbkit/internal/cliutil"
	"github.com/subspace/kbkit/internal/version"
	"github.com/subspace/kbkit/selftest"
	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/sim"
	"github.com/subspace/kbkit/target"
)

type options struct {
	quick                   bool
	seeds, mutants          int
	fuzzSeconds             float64
	mutantSeed              uint64
	protocol, allChecks     string // "": the profile's
	only, mutant, root, dsn string
	parts                   []string
	jsonOut, htmlOut, mdOut string
	from                    string
}

// reportFlags are the flags --from (no run) takes; it refuses every other.
var reportFlags = []string{"from", "json", "html", "markdown"}

var partNames = []string{"servers", "clients", "adapters", "mutants"}

// NewCommand returns `kbkit selftest`, its broken servers given by servers.
func NewCommand(servers selftest.Servers) *cobra.Command {
	var o options
	cmd := &cobra.Command{
		Use:   "selftest",
		Short: "Run every negative control of the kit, its zoo of real anomalies and kbcore mutants; report what caught each",
		Long: `Measures the kit's power. Runs every negative control kbkit ships and
reports, for each, the check that caught it and the seeds or seconds it took:

  - each broken server (the --broken-server variants of conformance run)
    under the simulator and (full profile) the protocol suite, against
    the reference server on an embedded Postgres;
  - each bug of the example client (examples/client-js --broken BUG)
    under the client suite;
  - the broken adapter (speckit/adapters/broken) under spec run and
    spec fuzz;
  - the zoo: published anomalies of real sync engines translated into
    this protocol (broken servers and client bugs);
  - a sample of single-edit mutants of kbcore per area (apply, window,
    planner, index, tokenizer, ranks, canonical form), each built with
    go build -overlay (the tree is never edited) and judged by spec run,
    spec fuzz against the unmutated reference and go test ./kbcore/...;
    the mutation score per area, the survivors and the equivalents
    (selftest/equivalents.txt, reviewed).

Each verdict is judged against a positive control that must pass: the
broken servers' proxy at rest, the example client unbroken, the
reference adapter unmutated.

The mutants, the example client and the broken adapter need kbkit's
source tree (--root, default: the one around the working directory), Go
and Node with examples/client-js's node_modules (npm ci).

--quick is the CI profile (a few seeds, no protocol suite, one mutant
per area, 3 s of fuzz); the default is the full profile, by hand.

Exit status: 0 every control caught, 1 a control was missed, 2 a control
or a part could not run (never counted as caught).`,
		Example: `  kbkit selftest --quick
  kbkit selftest --json power.json --html power.html --markdown docs/power.md
  kbkit selftest --parts servers --only '^stale-page$' --seeds 10
  kbkit selftest --parts mutants --mutant-seed 12 --mutant '^kbcore/plan.go:spellable:'
  kbkit selftest --from docs/power.json --markdown docs/power.md`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			ctx := c.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
			defer stop()
			if code := run(ctx, c, o, servers); code != cliutil.ExitOK {
				return cliutil.ExitError{Code: code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.quick, "quick", false, "the CI profile: 6 seeds at most, no protocol suite, 1 mutant per area, 3 s of fuzz")
	f.IntVar(&o.seeds, "seeds", 0, "most seeds per broken server or client before it counts as missed (default: the profile's)")
	f.IntVar(&o.mutants, "mutants", -1, "mutants per area (0: none; default: the profile's)")
	f.Float64Var(&o.fuzzSeconds, "fuzz-seconds", 0, "spec fuzz's seconds per mutant and broken adapter (default: the profile's)")
	f.Uint64Var(&o.mutantSeed, "mutant-seed", 0, "the seed that draws the mutants (default: the profile's)")
	f.StringVar(&o.protocol, "protocol", "", "run the broken servers under the protocol suite: true or false (default: the profile's)")
	f.StringVar(&o.allChecks, "all-checks", "", "judge each mutant by every check, not only up to the first kill: true or false (default: the profile's)")
	f.StringVar(&o.only, "only", "", "run only the controls, zoo entries and mutant areas whose name matches this regular expression")
	f.StringVar(&o.mutant, "mutant", "", "judge only the mutants whose signature (file:func:kind:old->new#n, as the JSON report gives it) matches this regular expression")
	f.StringSliceVar(&o.parts, "parts", nil, "run only these parts ("+strings.Join(partNames, ", ")+"; default all)")
	f.StringVar(&o.dsn, "dsn", "", "run the reference server on this PostgreSQL database (default: one of pgprovider's: $KBKIT_PG_DSN, Docker or local binaries)")
	f.StringVar(&o.root, "root", "", "kbkit's source tree (default: the one around the working directory)")
	f.StringVar(&o.jsonOut, "json", "", "also write the report as JSON to this file (- = stdout; the text then goes to stderr)")
	f.StringVar(&o.htmlOut, "html", "", "also write the report as an HTML page to this file")
	f.StringVar(&o.mdOut, "markdown", "", "also write the report as Markdown (docs/power.md) to this file")
	f.StringVar(&o.from, "from", "", "run nothing: render a report kept with --json again (its text, and --json, --html, --markdown), e.g. after kbkit's renderer changed")
	return cmd
}

func fail(stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "kbkit selftest: "+format+"\n", args...)
	return cliutil.ExitErrored
}

// profile is the profile the flags ask for.
func (o options) profile() (selftest.Profile, error) {
	p := selftest.Full
	if o.quick {
		p = selftest.Quick
	}
	if o.seeds > 0 {
		p.Seeds = o.seeds
	}
	if o.mutants >= 0 {
		p.MutantsPerArea = o.mutants
	}
	if o.fuzzSeconds > 0 {
		p.FuzzSeconds = o.fuzzSeconds
	}
	if o.mutantSeed > 0 {
		p.MutantSeed = o.mutantSeed
	}
	for _, b := range []struct {
		flag, v string
		to      *bool
	}{{"--protocol", o.protocol, &p.Protocol}, {"--all-checks", o.allChecks, &p.AllChecks}} {
		switch b.v {
		case "":
		case "true":
			*b.to = true
		case "false":
			*b.to = false
		default:
			return p, fmt.Errorf("%s: want true or false, not %q", b.flag, b.v)
		}
	}
	if o.quick && o.seeds == 0 && o.mutants < 0 && o.fuzzSeconds == 0 {
		p.Name = "quick"
	} else if !o.quick && (o.seeds > 0 || o.mutants >= 0 || o.fuzzSeconds > 0 || o.protocol != "" || o.allChecks != "") {
		p.Name = "full (narrowed)"
	}
	return p, nil
}

func run(ctx context.Context, c *cobra.Command, o options, servers selftest.Servers) int {
	stderr := c.ErrOrStderr()
	if o.from != "" {
		return render(c, o)
	}
	p, err := o.profile()
	if err != nil {
		return fail(stderr, "%v", err)
	}
	for _, part := range o.parts {
		if !slices.Contains(partNames, part) {
			return fail(stderr, "--parts: no part %q (one of %s)", part, strings.Join(partNames, ", "))
		}
	}
	var only *regexp.Regexp
	if o.only != "" {
		if only, err = regexp.Compile(o.only); err != nil {
			return fail(stderr, "--only: %v", err)
		}
	}
	var mutant *regexp.Regexp
	if o.mutant != "" {
		if mutant, err = regexp.Compile(o.mutant); err != nil {
			return fail(stderr, "--mutant: %v", err)
		}
	}
	root := o.root
	if root == "" {
		root = "."
	}
	if root, err = selftest.FindRoot(root); err != nil {
		return fail(stderr, "%v", err)
	}
	// The report files are opened first: a typo in a path should not
	// cost a run.
	return report(c, o, func() *selftest.Report {
		return runReport(ctx, c, o, p, root, only, mutant, servers)
	})
}

// runReport runs the selftest the flags ask for.
func runReport(ctx context.Context, c *cobra.Command, o options, p selftest.Profile, root string, only, mutant *regexp.Regexp, servers selftest.Servers) *selftest.Report {
	stderr := c.ErrOrStderr()
	rep := selftest.Run(ctx, selftest.Options{
		Profile: p, Root: root, Servers: servers, Only: only, Mutant: mutant, Parts: o.parts,
		Target: func(ctx context.Context) (sim.Target, func(), error) {
			if o.dsn != "" {
				e, err := target.NewEmbedded(ctx, o.dsn, target.EmbeddedOptions{Instances: 2})
				if err != nil {
					return nil, nil, err
				}
				return e, e.Close, nil
			}
			e, stop, err := target.Provide(ctx, target.ProvideOptions{Postgres: pgprovider.OptionsFromEnv(),
				Embedded: target.EmbeddedOptions{Instances: 2}})
			if err != nil {
				return nil, nil, err
			}
			return e, stop, nil
		},
		Logf: func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) },
	})
	rep.Version = version.Kit
	rep.Command = commandLine(c)
	return rep
}

// report opens the report files, gets the report from produce, and
// writes its text and the files; the exit status is the report's.
func report(c *cobra.Command, o options, produce func() *selftest.Report) int {
	stdout, stderr := c.OutOrStdout(), c.ErrOrStderr()
	outs, closeAll, err := openOutputs(o, stdout)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	defer closeAll()
	text := stdout
	if o.jsonOut == "-" {
		text = stderr
	}
	rep := produce()
	rep.WriteText(text)
	if err := writeOutputs(rep, outs); err != nil {
		return fail(stderr, "%v", err)
	}
	return rep.ExitCode()
}

// render writes a kept report again (--from): read first, so that a bad
// file writes nothing.
func render(c *cobra.Command, o options) int {
	stderr := c.ErrOrStderr()
	var other string
	c.Flags().Visit(func(f *pflag.Flag) {
		if other == "" && !slices.Contains(reportFlags, f.Name) {
			other = f.Name
		}
	})
	if other != "" {
		return fail(stderr, "--from renders a kept report and runs nothing: --%s does not apply", other)
	}
	b, err := os.ReadFile(o.from)
	if err != nil {
		return fail(stderr, "--from: %v", err)
	}
	rep, err := selftest.ReadJSON(b)
	if err != nil {
		return fail(stderr, "--from %s: %v", o.from, err)
	}
	if rep.Version == "" || len(rep.Controls) == 0 && len(rep.Mutants) == 0 {
		return fail(stderr, "--from %s: not a report of kbkit selftest --json (no version, no control, no mutant)", o.from)
	}
	return report(c, o, func() *selftest.Report { return rep })
}

// commandLine is the command as it ran: its path and every flag it was
// given, with the value it took (flags by name, values shell
// quoted where needed), for the report to say what produced it.
func commandLine(c *cobra.Command) string {
	parts := []string{c.CommandPath()}
	c.Flags().Visit(func(f *pflag.Flag) {
		v := f.Value.String()
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			v = strings.Join(sv.GetSlice(), ",")
		}
		if f.Value.Type() == "bool" && v == "true" {
			parts = append(parts, "--"+f.Name)
			return
		}
		parts = append(parts, "--"+f.Name, shellQuote(v))
	})
	return strings.Join(parts, " ")
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// letters, digits and -_./:,=+@.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:,=+@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

type outputs struct{ json, html, md io.Writer }

func openOutputs(o options, stdout io.Writer) (outputs, func(), error) {
	var out outputs
	var closers []func() error
	closeAll := func() {
		for _, c := range closers {
			_ = c()
		}
	}
	for _, f := range []struct {
		path string
		to   *io.Writer
	}{{o.jsonOut, &out.json}, {o.htmlOut, &out.html}, {o.mdOut, &out.md}} {
		if f.path == "" {
			continue
		}
		w, c, err := cliutil.CreateOutput(f.path, stdout)
		if err != nil {
			closeAll()
			return out, nil, err
		}
		*f.to = w
		closers = append(closers, c)
	}
	return out, closeAll, nil
}

func writeOutputs(rep *selftest.Report, out outputs) error {
	if out.json != nil {
		if err := rep.WriteJSON(out.json); err != nil {
			return err
		}
	}
	if out.html != nil {
		if err := rep.WriteHTML(out.html); err != nil {
			return err
		}
	}
	if out.md != nil {
		rep.WriteMarkdown(out.md)
	}
	return nil
}
