package main

import (
	"context"
	"os"
	"testing"

	"github.com/subspace/kbkit/internal/cliutil"
)

// The test binary doubles as kbkit (a child process running one of its
// commands); children inherit the environment.
const envMain = "KBKIT_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envMain) == "1" {
		os.Exit(run(os.Args[1:]))
	}
	os.Setenv(envMain, "1")
	os.Exit(m.Run())
}

// kbkit runs the CLI in process.
func kbkit(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return kbkitContext(context.Background(), t, stdin, args...)
}

// kbkitContext runs the CLI in process with ctx as the command's context
// (cancelling it is an interrupt).
func kbkitContext(ctx context.Context, t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return cliutil.Execute(ctx, newRootCmd(), stdin, args...)
}
