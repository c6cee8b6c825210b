package cli

import (
	"context"
	"testing"

	"github.com/subspace/kbkit/internal/cliutil"
)

const (
	exitOK      = cliutil.ExitOK
	exitFailed  = cliutil.ExitFailed
	exitErrored = cliutil.ExitErrored
)

// kbkit runs `kbkit conformance protocol` in process, mounted as
// cmd/kbkit mounts it, and returns its exit status and output.
func kbkit(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return cliutil.Execute(context.Background(), cliutil.Mount([]string{"conformance"}, NewCommand()), stdin, args...)
}
