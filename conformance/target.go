// Package conformance is kbkit's multi-client simulator: windows on several
// devices edit several pages of a server through the real wire protocol
// while faults are injected, then checkers prove convergence, the
// projection, gapless seqs, rollback of rejections, refetch after gaps and
// per-page linearizability.
//
// From Go tests:
//
//	target, _ := conformance.NewEmbedded(ctx, dsn, conformance.EmbeddedOptions{})
//	defer target.Close()
//	conformance.Run(t, target, conformance.Options{Seeds: 20, Faults: true})
//
// Or against any server speaking spec/PROTOCOL.md:
//
//	target := conformance.Remote("http://127.0.0.1:8080", []string{tok1, tok2})
//
// Every run is a pure function of its seed and the server's answers: the
// scheduler sends one command at a time and delivers echoes in the order it
// draws, so a failing seed replays exactly against a deterministic server.
package conformance

import (
	"context"
	"errors"
	"fmt"
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
var ErrCannotRun = errors.New("conformance: cannot run")

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
