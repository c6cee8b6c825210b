package target

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/subspace/kbkit/client"
)

// Target is a server under test.
type Target interface {
	// Endpoints are the base URLs of the server's instances.
	Endpoints() []string
	// Devices returns tokens of paired devices of one workspace, at least
	// n of them, for one run. Remote targets return their fixed tokens.
	Devices(ctx context.Context, n int) ([]string, error)
}

// Restarter is implemented by targets whose instances the simulator may
// kill and restart (a fault).
type Restarter interface {
	RestartInstance(ctx context.Context, i int) error
}

// PostgresRestarter is implemented by targets whose database the simulator
// may restart (a fault, at most one seed in ten).
type PostgresRestarter interface {
	CanRestartPostgres() bool
	RestartPostgres(ctx context.Context) error
}

// ErrCannotRun wraps every reason a run could not start (exit status 2).
var ErrCannotRun = errors.New("kbkit: cannot run")

type remote struct {
	url    string
	tokens []string
}

// Remote is a server at url with the given device tokens (one device per
// token; all of one workspace).
func Remote(url string, tokens []string) Target { return remote{url: url, tokens: tokens} }

func (r remote) Endpoints() []string { return []string{r.url} }

func (r remote) Devices(_ context.Context, n int) ([]string, error) {
	if len(r.tokens) == 0 {
		return nil, fmt.Errorf("%w: no device token given (--token)", ErrCannotRun)
	}
	out := make([]string, n)
	for i := range out {
		out[i] = r.tokens[i%len(r.tokens)]
	}
	return out, nil
}

// PreflightTimeout bounds the check that a remote server answers and knows
// every token, so a dead server or a wrong token fails a run in seconds.
const PreflightTimeout = 5 * time.Second

// preflighter is a target that can say up front why no seed could run.
type preflighter interface {
	preflight(ctx context.Context) error
}

// preflight asks kb.whoami once per token, without the retries a seed
// makes (a seed rides out a restarting server; a run that cannot start
// should say so at once), and checks that the tokens share a workspace.
func (r remote) preflight(ctx context.Context) error {
	if r.url == "" {
		return fmt.Errorf("%w: no server URL (--server)", ErrCannotRun)
	}
	if len(r.tokens) == 0 {
		return fmt.Errorf("%w: no device token given (--token)", ErrCannotRun)
	}
	if err := client.CheckServerURL(r.url); err != nil {
		return fmt.Errorf("%w: %v", ErrCannotRun, err)
	}
	ctx, cancel := context.WithTimeout(ctx, PreflightTimeout)
	defer cancel()
	var first client.Device
	for i, tok := range r.tokens {
		me, err := client.New(r.url, tok).Whoami(ctx)
		var ce *client.Error
		switch {
		case errors.As(err, &ce) && ce.Code == client.CodeInvalidResponse:
			return fmt.Errorf("%w: the server at %s is not a kbkit server (%s)", ErrCannotRun, r.url, notTRPC(ce))
		case errors.As(err, &ce):
			return fmt.Errorf("%w: the server at %s refuses token %d of %d: %v", ErrCannotRun, r.url, i+1, len(r.tokens), err)
		case err != nil:
			return fmt.Errorf("%w: the server at %s is unreachable: %v", ErrCannotRun, r.url, err)
		case i > 0 && me.WorkspaceID != first.WorkspaceID:
			return fmt.Errorf("%w: token %d is a device of workspace %s, token 1 of workspace %s; all tokens must be of one workspace (kbkit serve pairs its device in workspace \"dev\")", ErrCannotRun, i+1, workspaceName(me), workspaceName(first))
		case i == 0:
			first = me
		}
	}
	return nil
}

// workspaceName names a device's workspace: "NAME" (UUID) when the server
// says the name, else the UUID.
func workspaceName(d client.Device) string {
	if d.Workspace != "" {
		return fmt.Sprintf("%q (%s)", d.Workspace, d.WorkspaceID)
	}
	return d.WorkspaceID
}

// notTRPC words an answer that is not kbkit's: its status, not its page.
func notTRPC(e *client.Error) string {
	if e.HTTPStatus != 0 {
		return fmt.Sprintf("kb.whoami answered HTTP %d, not a tRPC answer", e.HTTPStatus)
	}
	return "kb.whoami answered no {workspace_id, device_id}"
}

// Preflight checks up front that a run against target can start: for a
// remote server, that it answers and accepts every token (kb.whoami, no
// retries, within PreflightTimeout), and that the tokens share a
// workspace. Other targets need no check. The error wraps ErrCannotRun.
func Preflight(ctx context.Context, target Target) error {
	if p, ok := target.(preflighter); ok {
		return p.preflight(ctx)
	}
	return nil
}
