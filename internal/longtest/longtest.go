// Package longtest marks the tests that take minutes on their own, so
// that make test stays short: make test sets KBKIT_SKIP_LONG and they
// skip, saying so; make test-long (scripts/test-long.sh) finds every test
// that calls Mark and runs exactly those, without it. CI runs both, so no
// test is dropped.
package longtest

import (
	"os"
	"testing"
)

// Env is the variable that skips the long tests when set.
const Env = "KBKIT_SKIP_LONG"

// Mark skips t when Env is set. Call it first in a long test.
func Mark(t testing.TB) {
	t.Helper()
	if os.Getenv(Env) != "" {
		t.Skip("a long test, run by make test-long (" + Env + " is set)")
	}
}
