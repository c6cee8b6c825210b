package wiresuite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/subspace/kbkit/speckit/report"
	"github.com/subspace/kbkit/target"
)

// Env is the server under test and what the checks need to talk to it.
type Env struct {
	// BaseURL is the server's base URL, e.g. http://127.0.0.1:8080.
	BaseURL string
	// Token is a device token (the device whose commands the checks send).
	Token string
	// OtherToken, when set, is a device token of another workspace: it
	// enables the cross-workspace checks (skipped otherwise).
	OtherToken string
	// Token2, when set, is a token of a second device of Token's
	// workspace: it enables protocol/hostile-id-other-device (skipped
	// otherwise).
	Token2 string
	// RevokeToken, when set, is a device token the suite may revoke (with
	// kb.revoke): it enables protocol/hostile-revoke (skipped otherwise).
	// The device is unusable afterwards.
	RevokeToken string
	// FreshToken, when set, is a valid device token the suite presents
	// only once, right after a burst of unknown tokens
	// (protocol/hostile-lockout): a token the server has not seen lately.
	FreshToken string
	// MaxBody is the server's limit of a request body, GET input and
	// WebSocket message (default 262144, the reference server's); the
	// checks of the limit send more than this.
	MaxBody int64
	// HTTP is the client for HTTP requests (default: 30 s timeout).
	HTTP *http.Client
	// Restart, when set, has the server shut down gracefully (as on
	// SIGTERM) and come back on the same URL; it enables protocol/reconnect
	// (skipped otherwise). RestartCommand and RestartURL make one from
	// what an operator can pass on the command line.
	Restart func(ctx context.Context) error
	// EventTimeout bounds the wait for a message the server owes (an
	// answer, an event); default 10 s.
	EventTimeout time.Duration
	// Quiet is how long a check waits to make sure no more messages
	// arrive (after a stop, after the last owed event); default 300 ms.
	Quiet time.Duration

	// Set by Preflight: the devices the tokens belong to.
	WorkspaceID, DeviceID           string
	OtherWorkspaceID, OtherDeviceID string
	Device2ID                       string

	// failed records the checks of the run that failed (setup.go).
	failed *failedChecks
}

func (e *Env) defaults() {
	e.BaseURL = strings.TrimRight(e.BaseURL, "/")
	if e.failed == nil {
		e.failed = &failedChecks{ids: map[string]bool{}}
	}
	if e.MaxBody <= 0 {
		e.MaxBody = 256 << 10
	}
	if e.HTTP == nil {
		e.HTTP = &http.Client{Timeout: 30 * time.Second}
	}
	if e.EventTimeout <= 0 {
		e.EventTimeout = 10 * time.Second
	}
	if e.Quiet <= 0 {
		e.Quiet = 300 * time.Millisecond
	}
}

// Preflight asks kb.whoami for each token and fills in the devices. An
// unreachable server, a token the server refuses, or an --other-token of
// the same workspace is target.ErrCannotRun: no check could say anything useful.
func (e *Env) Preflight(ctx context.Context) error {
	e.defaults()
	if e.BaseURL == "" {
		return fmt.Errorf("%w: no server URL", target.ErrCannotRun)
	}
	who := func(token, what string) (ws, dev string, err error) {
		r, err := e.send(ctx, request{method: http.MethodGet, path: "/trpc/kb.whoami", token: token})
		if err != nil {
			return "", "", fmt.Errorf("%w: the server at %s is unreachable: %v", target.ErrCannotRun, e.BaseURL, err)
		}
		if !json.Valid(r.Body) {
			return "", "", fmt.Errorf("%w: the server at %s is not a kbkit server (kb.whoami answered HTTP %d, not a tRPC answer)", target.ErrCannotRun, e.BaseURL, r.Status)
		}
		if r.Status == http.StatusUnauthorized {
			return "", "", fmt.Errorf("%w: the server refuses %s (HTTP 401): %s", target.ErrCannotRun, what, excerpt(r.Body, 300))
		}
		data, ferr := expectSuccess(r)
		if ferr != nil {
			return "", "", fmt.Errorf("%w: kb.whoami with %s: %v", target.ErrCannotRun, what, ferr)
		}
		var d struct {
			WorkspaceID string `json:"workspace_id"`
			DeviceID    string `json:"device_id"`
		}
		if err := jsonUnmarshal(data, &d); err != nil || d.DeviceID == "" || d.WorkspaceID == "" {
			return "", "", fmt.Errorf("%w: kb.whoami with %s answered no {workspace_id, device_id}: %s", target.ErrCannotRun, what, excerpt(r.Body, 300))
		}
		return d.WorkspaceID, d.DeviceID, nil
	}
	var err error
	if e.Token == "" {
		return fmt.Errorf("%w: no device token", target.ErrCannotRun)
	}
	if e.WorkspaceID, e.DeviceID, err = who(e.Token, "the token"); err != nil {
		return err
	}
	if e.OtherToken != "" {
		if e.OtherWorkspaceID, e.OtherDeviceID, err = who(e.OtherToken, "the other token"); err != nil {
			return err
		}
		if e.OtherWorkspaceID == e.WorkspaceID {
			return fmt.Errorf("%w: the other token is a device of the same workspace %s; it must be of another workspace", target.ErrCannotRun, e.WorkspaceID)
		}
	}
	if e.Token2 != "" {
		var ws string
		if ws, e.Device2ID, err = who(e.Token2, "the second token"); err != nil {
			return err
		}
		if ws != e.WorkspaceID || e.Device2ID == e.DeviceID {
			return fmt.Errorf("%w: the second token must be another device (not %s) of the workspace %s; it is device %s of workspace %s",
				target.ErrCannotRun, e.DeviceID, e.WorkspaceID, e.Device2ID, ws)
		}
	}
	return nil
}

// Check is one rule of spec/PROTOCOL.md.
type Check struct {
	// ID is stable: protocol/<kebab-case>.
	ID string
	// Description says what is checked, with the section of PROTOCOL.md.
	Description string
	// Run returns nil when the server obeys the rule, a Skip error when the
	// check cannot be made here, any other error (a *Failure for details)
	// when it does not.
	Run func(ctx context.Context, env *Env) error
}

// Status of a checked rule.
type Status string

// Statuses.
const (
	Pass Status = "pass"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Result is one check's verdict.
type Result struct {
	ID          string        `json:"id"`
	Description string        `json:"description"`
	Status      Status        `json:"status"`
	Message     string        `json:"message,omitempty"`
	Expected    string        `json:"expected,omitempty"`
	Got         string        `json:"got,omitempty"`
	Request     string        `json:"request,omitempty"`
	Response    string        `json:"response,omitempty"`
	Duration    time.Duration `json:"-"`
	// Expectation is the entry of Options.Expect the check matched, and
	// Verdict what its status means under it (expect.go); both are empty
	// without one.
	Expectation *report.Expectation `json:"expectation,omitempty"`
	Verdict     report.Verdict      `json:"verdict,omitempty"`
}

// Failure is a check's failure with the evidence: what was expected, what
// came, the request and an excerpt of the raw response.
type Failure struct {
	Message  string
	Expected string
	Got      string
	Request  string
	Response string
}

func (f *Failure) Error() string {
	s := f.Message
	if f.Expected != "" || f.Got != "" {
		s += fmt.Sprintf(" (expected %s, got %s)", f.Expected, f.Got)
	}
	return s
}

type skipError struct{ reason string }

func (s skipError) Error() string { return "skip: " + s.reason }

// Skipf returns the error a check returns when it cannot be made here.
func Skipf(format string, args ...any) error { return skipError{fmt.Sprintf(format, args...)} }

// Options select and time the checks.
type Options struct {
	// Match, when set, runs only the checks whose id matches.
	Match *regexp.Regexp
	// Timeout bounds one check (default 60 s).
	Timeout time.Duration
	// OnResult is called after each check, in order; n counts from 1 and
	// total is the number of selected checks.
	OnResult func(n, total int, r Result)
	// Strict turns a skipped check into a failed one (the message keeps
	// the reason): a run that could not check a rule certifies nothing
	// about it.
	Strict bool
	// Expect is the run's expectations file (spec/EXPECTATIONS.md), by
	// check id: a check expected to be skipped is not run, one expected to
	// fail or known to be flaky is judged by it (expect.go).
	Expect *report.Expectations
}

// Select returns the checks whose id matches re (all when re is nil).
func Select(checks []Check, re *regexp.Regexp) []Check {
	if re == nil {
		return checks
	}
	var out []Check
	for _, c := range checks {
		if re.MatchString(c.ID) {
			out = append(out, c)
		}
	}
	return out
}

// Run runs the selected checks one after the other. Call Preflight first.
func Run(ctx context.Context, env *Env, checks []Check, opts Options) []Result {
	env.defaults()
	if opts.Timeout <= 0 {
		opts.Timeout = 60 * time.Second
	}
	sel := Select(checks, opts.Match)
	out := make([]Result, 0, len(sel))
	for i, c := range sel {
		e := opts.Expect.Match(c.ID)
		var r Result
		if e != nil && e.Status == report.ExpectSkip {
			r = Result{ID: c.ID, Description: c.Description, Status: Skip, Message: "expected skip: " + e.Reason, Expectation: e}
		} else {
			r = RunOne(ctx, env, c, opts.Timeout)
			if opts.Strict && r.Status == Skip {
				r.Status, r.Message = Fail, "skipped, which --strict counts as a failure: "+r.Message
			}
			r = judge(opts.Expect, e, r)
		}
		out = append(out, r)
		if opts.OnResult != nil {
			opts.OnResult(i+1, len(sel), r)
		}
	}
	return out
}

// RunOne runs one check with a timeout.
func RunOne(ctx context.Context, env *Env, c Check, timeout time.Duration) (r Result) {
	env.defaults()
	r = Result{ID: c.ID, Description: c.Description}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	defer func() {
		r.Duration = time.Since(start)
		if p := recover(); p != nil {
			r.Status, r.Message = Fail, fmt.Sprintf("the check panicked: %v", p)
		}
	}()
	err := c.Run(cctx, env)
	var skip skipError
	var f *Failure
	switch {
	case err == nil:
		r.Status = Pass
	case errors.As(err, &skip):
		r.Status, r.Message = Skip, skip.reason
	case errors.As(err, &f):
		r.Status, r.Message = Fail, f.Message
		r.Expected, r.Got, r.Request, r.Response = f.Expected, f.Got, f.Request, f.Response
	default:
		r.Status, r.Message = Fail, err.Error()
	}
	if r.Status == Fail && cctx.Err() != nil && ctx.Err() == nil {
		r.Message += fmt.Sprintf(" (the check timed out after %s)", timeout)
	}
	env.failed.set(c.ID, r.Status == Fail)
	return r
}

// Summary counts results. Failed counts the checks that fail the run:
// failures without an expectation and stale expectations (Stale);
// ExpectedFail and Flaky count the failures an expectation allows.
type Summary struct {
	Total, Passed, Failed, Skipped int
	ExpectedFail, Flaky, Stale     int
	// FailedIDs lists the failed checks in order.
	FailedIDs []string
	// SkippedIDs lists the skipped checks in order.
	SkippedIDs []string
}

// Summarize counts the results.
func Summarize(rs []Result) Summary {
	var s Summary
	for _, r := range rs {
		s.Total++
		switch {
		case r.Verdict == report.VerdictExpectedFail:
			s.ExpectedFail++
		case r.Verdict == report.VerdictKnownFlaky:
			s.Flaky++
		case r.Verdict == report.VerdictUnexpectedPass:
			s.Stale++
			s.Failed++
			s.FailedIDs = append(s.FailedIDs, r.ID)
		case r.Status == Pass:
			s.Passed++
		case r.Status == Skip:
			s.Skipped++
			s.SkippedIDs = append(s.SkippedIDs, r.ID)
		default:
			s.Failed++
			s.FailedIDs = append(s.FailedIDs, r.ID)
		}
	}
	return s
}

func (s Summary) String() string {
	out := fmt.Sprintf("%d checks: %d passed, %d failed, %d skipped", s.Total, s.Passed, s.Failed, s.Skipped)
	for _, n := range []struct {
		n    int
		what string
	}{{s.Stale, "stale expectations (among the failed)"}, {s.ExpectedFail, "failed as expected"}, {s.Flaky, "failed, known flaky"}} {
		if n.n > 0 {
			out += fmt.Sprintf(", %d %s", n.n, n.what)
		}
	}
	return out
}
