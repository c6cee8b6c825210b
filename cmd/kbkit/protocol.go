package main

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
}

func newConformanceProtocolCmd() *cobra.Command {
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

The server may also be given as $KBKIT_URL, the token as $KBKIT_TOKEN (and
the other as $KBKIT_OTHER_TOKEN, the second device's as $KBKIT_TOKEN2,
the one to revoke as $KBKIT_REVOKE_TOKEN), keeping them out of the process list.

Exit status: 0 every check passed (or was skipped, without --strict),
1 a check failed (or was skipped, with --strict), 2 the suite could not
run (server unreachable, token refused, bad flags).`,
		Example: `  kbkit serve --addr 127.0.0.1:8080 > server.json & srv=$!
  until [ -s server.json ]; do sleep 1; done
  kbkit conformance protocol --server http://127.0.0.1:8080 --token "$(jq -r .token server.json)"
  export KBKIT_URL=http://127.0.0.1:8080 KBKIT_TOKEN=$(jq -r .token server.json)
  KBKIT_OTHER_TOKEN=$(kbkit device pair --workspace other --dsn "$(jq -r .dsn server.json)" | jq -r .token) \
  KBKIT_REVOKE_TOKEN=$(kbkit device pair --workspace spare --dsn "$(jq -r .dsn server.json)" | jq -r .token) \
      kbkit conformance protocol --junit protocol.xml
  kbkit conformance protocol --run 'protocol/(retry|rejection)' --json - | jq -c '{id, status}'
  kbkit conformance protocol --strict --restart-command 'systemctl restart kbkit' --junit protocol.xml
  kbkit conformance protocol --list; kill $srv`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			ctx := c.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
			defer stop()
			if code := runProtocol(ctx, o, c.OutOrStdout(), c.ErrOrStderr()); code != exitOK {
				return exitError{Code: code}
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
	f.BoolVar(&o.list, "list", false, "list the checks and exit")
	f.BoolVar(&o.strict, "strict", false, "a skipped check fails the run (exit 1), as a failed one does")
	f.StringVar(&o.restartCmd, "restart-command", "", "shell command that has the server shut down gracefully and come back on the same URL: enables protocol/reconnect")
	f.StringVar(&o.restartURL, "restart-url", "", "URL to POST to so that the server shuts down gracefully and comes back on the same URL: enables protocol/reconnect")
	return cmd
}

// runProtocol is `kbkit conformance protocol`; it returns the exit code.
func runProtocol(ctx context.Context, o protocolOptions, stdout, stderr io.Writer) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "kbkit conformance protocol: "+format+"\n", args...)
		return exitErrored
	}
	var re *regexp.Regexp
	if o.run != "" {
		var err error
		if re, err = regexp.Compile(o.run); err != nil {
			return fail("--run: %v", err)
		}
	}
	checks := wiresuite.Select(wiresuite.Checks(), re)
	if o.list {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		for _, c := range checks {
			fmt.Fprintf(tw, "%s\t%s\n", c.ID, c.Description)
		}
		_ = tw.Flush()
		return exitOK
	}
	if len(checks) == 0 {
		return fail("--run %q matches no check (see --list)", o.run)
	}
	if o.token == "" {
		o.token = os.Getenv(client.EnvToken)
	}
	if o.server == "" {
		o.server = os.Getenv(client.EnvURL)
	}
	if o.otherToken == "" {
		o.otherToken = os.Getenv("KBKIT_OTHER_TOKEN")
	}
	if o.freshToken == "" {
		o.freshToken = os.Getenv("KBKIT_FRESH_TOKEN")
	}
	if o.revokeToken == "" {
		o.revokeToken = os.Getenv("KBKIT_REVOKE_TOKEN")
	}
	if o.token2 == "" {
		o.token2 = os.Getenv("KBKIT_TOKEN2")
	}
	switch {
	case o.server == "":
		return fail("--server (or $KBKIT_URL) is required")
	case o.token == "":
		return fail("--token (or $KBKIT_TOKEN) is required")
	case o.restartCmd != "" && o.restartURL != "":
		return fail("--restart-command and --restart-url: give one")
	}
	// Open the report files first: a typo in a path should not cost a run.
	var junitFile, jsonFile *os.File
	var jsonOut io.Writer
	tapOut := stdout
	var err error
	if o.junit != "" {
		if junitFile, err = os.Create(o.junit); err != nil {
			return fail("--junit: %v", err)
		}
		defer junitFile.Close()
	}
	switch o.json {
	case "":
	case "-":
		jsonOut, tapOut = stdout, stderr
	default:
		if jsonFile, err = os.Create(o.json); err != nil {
			return fail("--json: %v", err)
		}
		defer jsonFile.Close()
		jsonOut = jsonFile
	}

	env := &wiresuite.Env{BaseURL: o.server, Token: o.token, Token2: o.token2, OtherToken: o.otherToken, RevokeToken: o.revokeToken, FreshToken: o.freshToken,
		MaxBody: o.maxBody, EventTimeout: o.eventTimeout}
	switch {
	case o.restartCmd != "":
		env.Restart = wiresuite.RestartCommand(o.restartCmd)
	case o.restartURL != "":
		env.Restart = wiresuite.RestartURL(o.restartURL)
	}
	if err := env.Preflight(ctx); err != nil {
		return fail("%s", cliutil.CannotRun(err))
	}
	fmt.Fprintf(stderr, "kbkit conformance protocol: %s, workspace %s, device %s\n", env.BaseURL, env.WorkspaceID, env.DeviceID)

	start := time.Now()
	tap := wiresuite.NewTAP(tapOut)
	if err := tap.Begin(len(checks)); err != nil {
		return fail("%v", err)
	}
	results := wiresuite.Run(ctx, env, checks, wiresuite.Options{Timeout: o.timeout, Strict: o.strict,
		OnResult: func(n, _ int, r wiresuite.Result) { _ = tap.Result(n, r) }})
	sum := wiresuite.Summarize(results)
	_ = tap.End(sum)
	if ctx.Err() != nil {
		return fail("interrupted")
	}
	if junitFile != nil {
		if err := wiresuite.WriteJUnit(junitFile, "kbkit conformance protocol", results, time.Since(start)); err != nil {
			return fail("--junit: %v", err)
		}
	}
	if jsonOut != nil {
		if err := wiresuite.WriteJSON(jsonOut, results); err != nil {
			return fail("--json: %v", err)
		}
	}
	for _, r := range results {
		if r.Status == wiresuite.Skip {
			fmt.Fprintf(stderr, "kbkit conformance protocol: skipped %s: %s\n", r.ID, r.Message)
		}
	}
	fmt.Fprintf(stderr, "kbkit conformance protocol: %s in %s\n", sum, time.Since(start).Round(time.Millisecond))
	if sum.Skipped > 0 {
		fmt.Fprintf(stderr, "kbkit conformance protocol: %d checks skipped (--strict fails the run on a skip)\n", sum.Skipped)
	}
	if sum.Failed > 0 {
		return exitFailed
	}
	return exitOK
}
