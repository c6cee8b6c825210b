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
// Every random decision is a recorded choice (choices.go): a run replays
// from a choice list (Options.Choices), and Shrink reduces a failing seed
// to a small history that fails the same checker (shrink.go);
// ReplayCommand is the command line that runs a seed again.
package conformance

import (
	"context"
	"encoding/json"

	"github.com/subspace/kbkit/target"
)

// The server a run drives is a target.Target (package target, shared with
// the load generator); these names keep the simulator's API whole.
type (
	// Target is a server under test.
	Target = target.Target
	// Restarter is a target whose instances may be killed and restarted.
	Restarter = target.Restarter
	// PostgresRestarter is a target whose database may be restarted.
	PostgresRestarter = target.PostgresRestarter
	// Embedded is the reference server run in this process.
	Embedded = target.Embedded
	// EmbeddedOptions configure an Embedded target.
	EmbeddedOptions = target.EmbeddedOptions
	// RemoteCommands are an operator's restart commands for a remote
	// server.
	RemoteCommands = target.RemoteCommands
)

// PreflightTimeout bounds Preflight.
const PreflightTimeout = target.PreflightTimeout

// Remote is a server speaking spec/PROTOCOL.md at url, with tokens of one
// workspace's devices.
func Remote(url string, tokens []string) Target { return target.Remote(url, tokens) }

// RemoteWith is Remote whose instance and Postgres restarts run the
// operator's commands, so --faults can draw them (target.RemoteWith).
func RemoteWith(url string, tokens []string, c RemoteCommands) Target {
	return target.RemoteWith(url, tokens, c)
}

// NewEmbedded starts the reference server in this process on the database
// at dsn.
func NewEmbedded(ctx context.Context, dsn string, opts EmbeddedOptions) (*Embedded, error) {
	return target.NewEmbedded(ctx, dsn, opts)
}

// Preflight checks up front that a run against t can start (target.Preflight).
func Preflight(ctx context.Context, t Target) error { return target.Preflight(ctx, t) }

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
