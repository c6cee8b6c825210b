package sim

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
