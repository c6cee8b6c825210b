package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/subspace/kbkit/internal/procs"
)

// startedByGoRun reports whether this process is a binary `go run`
// compiled (it lives in a go-build temporary directory) and its parent is
// still that go command. `go run` does not pass a SIGTERM on: killing it
// (`go run ./cmd/kbkit serve & ... kill $!`) would leave the server
// running, holding its port and its Postgres.
func startedByGoRun() bool {
	exe, err := os.Executable()
	if err != nil || !strings.Contains(filepath.ToSlash(exe), "/go-build") {
		return false
	}
	st, ok := procs.ReadStat(os.Getppid())
	return ok && st.Comm == "go"
}

// withParent returns a context cancelled when ctx is, or when this
// process's parent goes away (it is reparented): the server then shuts
// down as on SIGTERM. The check runs every interval.
func withParent(ctx context.Context, interval time.Duration) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	parent := os.Getppid()
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if os.Getppid() != parent {
					cancel(errParentGone)
					return
				}
			}
		}
	}()
	return ctx, func() { close(done); cancel(nil) }
}

// errParentGone is the cause of a shutdown for the parent's death.
var errParentGone = parentGone{}

type parentGone struct{}

func (parentGone) Error() string { return "the parent process (go run) is gone" }
