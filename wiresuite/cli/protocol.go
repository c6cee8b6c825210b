package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/internal/cliutil"
	"github.com/subspace/kbkit/speckit/report"
	"github.com/subspace/kbkit/wiresuite"
)

// protocolOptions are the flags of `kbkit conformance protocol`.
type protocolOptions struct {
	server       string
	token        string
	otherToken   string
	token2       string
	revokeToken  string
	freshToken   string
	run          string
	junit        string
	json         string
	maxBody      int64
	timeout      time.Duration
	eventTimeout time.Duration
	list         bool
	strict       bool
	restartCmd   string
	restartURL   string
	expect       string
}

// NewCommand returns `conformance protocol`.
func NewCommand() *cobra.Command {
	var o protocolOptions
	cmd := &cobra.Command{
		Use:   "protocol",
		Short: "Check a running server against spec/PROTOCOL.md, rule by rule (black box)",
		Long: `Talks to the server at --server over HTTP and WebSocket as the device of
--token and checks every shape and rule of spec/PROTOCOL.md one by one:
success and error envelopes and codes, exactly-once per command id (a
retried id gets its original outcome), rejections, gapless seqs under
concurrent writers, kb.page snapshots and outcomes, kb.onPage replay and
lastEventId resume, batching, the WebSocket messages, the trust boundary
(each refused request writes nothing) and the limits.

Each check creates its own pages with fresh ids, so checks are independent
and the suite can be run again and again against the same server.
--other-token, a device of ANOTHER workspace, enables the cross-workspace
checks (skipped without it); --token2, a second device of the SAME
workspace as --token, enables protocol/hostile-id-other-device (a command
id reused by another device); --revoke-token, a device the suite may revoke
for good, enables protocol/hostile-revoke. The hostile checks read the
server's caps and timeouts from kb.limits and exercise each: they hold
connections up to a timeout, open up to max_connections sockets and
spend this address's unknown-token allowance (run last). protocol/reconnect needs a way to have the
server shut down gracefully (as on SIGTERM) and come back on the same URL:
--restart-command (run with sh -c, e.g. "systemctl restart kbkit") or
--restart-url (POSTed to, e.g. an orchestrator's hook); it is skipped
without one. Skipped checks are named on stderr; --strict counts them as
failed, so that a CI run cannot certify a rule it did not check.

The report is TAP version 14 on stdout: one test point per check, named by
its id; a failing check has a YAML block with the message, expected and
got, the request and an excerpt of the raw response. --junit and --json
also write JUnit XML and JSON lines (one object per check).

--expect FILE reads an expectations file (spec/EXPECTATIONS.md) by check
id: a check expected to fail (status fail) is reported as TODO and does
not fail the run, but one that passes does, as a stale expectation to
remove (the ratchet); known_flaky lets a check fail without failing the
run; skip does not run it. An id or glob that names no check is refused
before the run (exit 2).

The server may also be given as $KBKIT_URL, the token as $KBKIT_TOKEN (and
the other as $KBKIT_OTHER_TOKEN, the second device's as $KBKIT_TOKEN2,
the one to revoke as $KBKIT_REVOKE_TOKEN), keeping them out of the process list.

Exit status: 0 every check passed (or was skipped, without --strict, or
failed as --expect allows), 1 a check failed (or was skipped, with
--strict) or an expected failure passed, 2 the suite could not run
(server unreachable, token refused, bad flags or expectations file).`,
		Example: `  kbkit serve --addr 127.0.0.1:8080 > server.json & srv=$!
  until [ -s server.json ]; do sleep 1; done
  kbkit conformance protocol --server http://127.0.0.1:8080 --token "$(jq -r .token server.json)"
  export KBKIT_URL=http://127.0.0.1:8080 KBKIT_TOKEN=$(jq -r .token server.json)
  KBKIT_OTHER_TOKEN=$(kbkit device pair --workspace other --dsn "$(jq -r .dsn server.json)" | jq -r .token) \
  KBKIT_REVOKE_TOKEN=$(kbkit device pair --workspace spare --dsn "$(jq -r .dsn server.json)" | jq -r .token) \
      kbkit conformance protocol --junit protocol.xml
  kbkit conformance protocol --run 'protocol/(retry|rejection)' --json - | jq -c '{id, status}'
  kbkit conformance protocol --strict --restart-command 'systemctl restart kbkit' --junit protocol.xml
  kbkit conformance protocol --expect protocol-expectations.yaml --junit protocol.xml
  kbkit conformance protocol --list; kill $srv`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			ctx := c.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
			defer stop()
			if code := runProtocol(ctx, o, c.OutOrStdout(), c.ErrOrStderr()); code != cliutil.ExitOK {
				return cliutil.ExitError{Code: code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.server, "server", "", "base URL of the server under test, e.g. http://127.0.0.1:8080 (default $KBKIT_URL)")
	f.StringVar(&o.token, "token", "", "device token (default $KBKIT_TOKEN)")
	f.StringVar(&o.otherToken, "other-token", "", "a device token of another workspace: enables the cross-workspace checks (default $KBKIT_OTHER_TOKEN)")
	f.StringVar(&o.token2, "token2", "", "a second device token of the --token's workspace: enables protocol/hostile-id-other-device (default $KBKIT_TOKEN2)")
	f.StringVar(&o.freshToken, "fresh-token", "", "a device token the suite presents only once, right after a burst of unknown tokens (protocol/hostile-lockout) (default $KBKIT_FRESH_TOKEN)")
	f.StringVar(&o.revokeToken, "revoke-token", "", "a device token the suite may revoke (kb.revoke): enables protocol/hostile-revoke; the device is unusable afterwards (default $KBKIT_REVOKE_TOKEN)")
	f.StringVar(&o.run, "run", "", "run only the checks whose id matches this regular expression")
	f.StringVar(&o.junit, "junit", "", "also write a JUnit XML report to this file")
	f.StringVar(&o.json, "json", "", "also write one JSON object per check to this file (- = stdout; TAP then goes to stderr)")
	f.Int64Var(&o.maxBody, "max-body", 256<<10, "the server's body, GET input and WebSocket message limit in bytes (the limit checks send more)")
	f.DurationVar(&o.timeout, "timeout", 60*time.Second, "time limit of one check")
	f.DurationVar(&o.eventTimeout, "event-timeout", 10*time.Second, "how long to wait for an answer or event the server owes")
	f.StringVar(&o.expect, "expect", "", "expectations file (spec/EXPECTATIONS.md): check ids or globs expected to fail, known to be flaky or to be skipped")
	f.BoolVar(&o.list, "list", false, "list the checks and exit")
	f.BoolVar(&o.strict, "strict", false, "a skipped check fails the run (exit 1), as a failed one does")
	f.StringVar(&o.restartCmd, "restart-command", "", "shell command that has the server shut down gracefully and come back on the same URL: enables protocol/reconnect")
	f.StringVar(&o.restartURL, "restart-url", "", "URL to POST to so that the server shuts down gracefully and comes back on the same URL: enables protocol/reconnect")
	return cmd
}

// fail says why the suite could not run and returns exit status 2.
func fail(stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "kbkit conformance protocol: "+format+"\n", args...)
	return cliutil.ExitErrored
}

// runProtocol is `kbkit conformance protocol`; it returns the exit code.
func runProtocol(ctx context.Context, o protocolOptions, stdout, stderr io.Writer) int {
	var re *regexp.Regexp
	if o.run != "" {
		var err error
		if re, err = regexp.Compile(o.run); err != nil {
			return fail(stderr, "--run: %v", err)
		}
	}
	checks := wiresuite.Select(wiresuite.Checks(), re)
	if o.list {
		listChecks(stdout, checks)
		return cliutil.ExitOK
	}
	if len(checks) == 0 {
		return fail(stderr, "--run %q matches no check (see --list)", o.run)
	}
	expect, err := loadExpect(o.expect)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	o.fromEnv()
	switch {
	case o.server == "":
		return fail(stderr, "--server (or $KBKIT_URL) is required")
	case o.token == "":
		return fail(stderr, "--token (or $KBKIT_TOKEN) is required")
	case o.restartCmd != "" && o.restartURL != "":
		return fail(stderr, "--restart-command and --restart-url: give one")
	}
	// Open the report files first: a typo in a path should not cost a run.
	out, err := openReports(o, stdout, stderr)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	out.expect = expect
	defer out.close()
	env := o.env()
	if err := env.Preflight(ctx); err != nil {
		return fail(stderr, "%s", cliutil.CannotRun(err))
	}
	fmt.Fprintf(stderr, "kbkit conformance protocol: %s, workspace %s, device %s\n", env.BaseURL, env.WorkspaceID, env.DeviceID)
	return runChecks(ctx, env, checks, o, out, stderr)
}

// loadExpect reads --expect ("": none) and refuses, before the run, an
// entry that names no check or carries a key of another suite.
func loadExpect(name string) (*report.Expectations, error) {
	if name == "" {
		return nil, nil
	}
	x, err := report.LoadExpectations(name)
	if err != nil {
		return nil, err
	}
	if err := x.Refuse(func(e report.Expectation) string {
		if e.Client != "" || e.Server != "" {
			return "client and server narrow entries of kbkit conformance run only"
		}
		return ""
	}); err != nil {
		return nil, err
	}
	return x, x.RequireKnown(wiresuite.CheckIDs(wiresuite.Checks()), "protocol check", "kbkit conformance protocol --list lists them")
}

// listChecks is --list: each check's id and description.
func listChecks(w io.Writer, checks []wiresuite.Check) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range checks {
		fmt.Fprintf(tw, "%s\t%s\n", c.ID, c.Description)
	}
	_ = tw.Flush()
}

// fromEnv fills the server and the tokens not given as flags from the
// environment ($KBKIT_URL, $KBKIT_TOKEN, ...).
func (o *protocolOptions) fromEnv() {
	for _, v := range []struct {
		flag *string
		env  string
	}{
		{&o.token, client.EnvToken}, {&o.server, client.EnvURL}, {&o.otherToken, "KBKIT_OTHER_TOKEN"},
		{&o.freshToken, "KBKIT_FRESH_TOKEN"}, {&o.revokeToken, "KBKIT_REVOKE_TOKEN"}, {&o.token2, "KBKIT_TOKEN2"},
	} {
		if *v.flag == "" {
			*v.flag = os.Getenv(v.env)
		}
	}
}

// env is the suite's view of the server under test.
func (o protocolOptions) env() *wiresuite.Env {
	env := &wiresuite.Env{BaseURL: o.server, Token: o.token, Token2: o.token2, OtherToken: o.otherToken, RevokeToken: o.revokeToken, FreshToken: o.freshToken,
		MaxBody: o.maxBody, EventTimeout: o.eventTimeout}
	switch {
	case o.restartCmd != "":
		env.Restart = wiresuite.RestartCommand(o.restartCmd)
	case o.restartURL != "":
		env.Restart = wiresuite.RestartURL(o.restartURL)
	}
	return env
}

// reports are where the results go: TAP (stdout, or stderr when --json
// is stdout), --junit's file and --json's writer (nil: not asked for).
type reports struct {
	tap    io.Writer
	junit  *os.File
	json   io.Writer
	files  []*os.File
	expect *report.Expectations
}

// openReports creates --junit's and --json's files.
func openReports(o protocolOptions, stdout, stderr io.Writer) (*reports, error) {
	r := &reports{tap: stdout}
	if o.junit != "" {
		f, err := os.Create(o.junit)
		if err != nil {
			return nil, fmt.Errorf("--junit: %v", err)
		}
		r.junit = f
		r.files = append(r.files, f)
	}
	switch o.json {
	case "":
	case "-":
		r.json, r.tap = stdout, stderr
	default:
		f, err := os.Create(o.json)
		if err != nil {
			r.close()
			return nil, fmt.Errorf("--json: %v", err)
		}
		r.json = f
		r.files = append(r.files, f)
	}
	return r, nil
}

func (r *reports) close() {
	for _, f := range r.files {
		f.Close()
	}
}

// runChecks runs the checks, reporting each as it ends (TAP), then writes
// --junit and --json and says on stderr what was skipped and how long it
// took; it returns the exit code.
func runChecks(ctx context.Context, env *wiresuite.Env, checks []wiresuite.Check, o protocolOptions, out *reports, stderr io.Writer) int {
	start := time.Now()
	tap := wiresuite.NewTAP(out.tap)
	if err := tap.Begin(len(checks)); err != nil {
		return fail(stderr, "%v", err)
	}
	results := wiresuite.Run(ctx, env, checks, wiresuite.Options{Timeout: o.timeout, Strict: o.strict, Expect: out.expect,
		OnResult: func(n, _ int, r wiresuite.Result) { _ = tap.Result(n, r) }})
	sum := wiresuite.Summarize(results)
	_ = tap.End(sum)
	if ctx.Err() != nil {
		return fail(stderr, "interrupted")
	}
	if out.junit != nil {
		if err := wiresuite.WriteJUnit(out.junit, "kbkit conformance protocol", results, time.Since(start)); err != nil {
			return fail(stderr, "--junit: %v", err)
		}
	}
	if out.json != nil {
		if err := wiresuite.WriteJSON(out.json, results); err != nil {
			return fail(stderr, "--json: %v", err)
		}
	}
	for _, r := range results {
		switch {
		case r.Status == wiresuite.Skip:
			fmt.Fprintf(stderr, "kbkit conformance protocol: skipped %s: %s\n", r.ID, r.Message)
		case r.Verdict != "" && r.Verdict != report.VerdictExpectedFail:
			fmt.Fprintf(stderr, "kbkit conformance protocol: %s: %s\n", r.ID, r.Message)
		}
	}
	for _, e := range out.expect.Unused() {
		fmt.Fprintf(stderr, "kbkit conformance protocol: %s: expectation %q (%s) matched no check that ran\n", out.expect.Where(e), e.ID, e.Status)
	}
	fmt.Fprintf(stderr, "kbkit conformance protocol: %s in %s\n", sum, time.Since(start).Round(time.Millisecond))
	if sum.Skipped > 0 {
		fmt.Fprintf(stderr, "kbkit conformance protocol: %d checks skipped (--strict fails the run on a skip)\n", sum.Skipped)
	}
	if sum.Failed > 0 {
		return cliutil.ExitFailed
	}
	return cliutil.ExitOK
}
