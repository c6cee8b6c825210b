package wiresuite

import (
	"errors"
	"strings"
	"sync"
)

// A shared setup step (a new page, a WebSocket) has one check about it
// (setupOwners). When that check failed earlier in the run, a later check
// whose setup step fails the same way is skipped, naming the step and the
// check that fails for it, instead of failing again: a server without
// WebSockets fails protocol/ws-auth-header once, not every check that
// opens a socket. When the owner passed or did not run, the failure
// stands.

// Setup steps and the checks about them.
const (
	setupPage   = "a new page (create-page)"
	setupSocket = "a WebSocket (the upgrade with the Authorization header)"
)

var setupOwners = map[string]string{
	setupPage:   "protocol/create-page",
	setupSocket: "protocol/ws-auth-header",
}

// failedChecks remembers which checks of a run failed.
type failedChecks struct {
	mu  sync.Mutex
	ids map[string]bool
}

func (f *failedChecks) set(id string, failed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ids[id] = failed
}

func (f *failedChecks) has(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ids[id]
}

// setupFailed is err, the failure of the shared setup step, or a skip
// when the check about the step failed earlier in the run.
func (e *Env) setupFailed(step string, err error) error {
	var skip skipError
	owner := setupOwners[step]
	if err == nil || errors.As(err, &skip) || e.failed == nil || !e.failed.has(owner) {
		return err
	}
	return Skipf("needs %s, which failed (%s fails for it): %s", step, owner, strings.SplitN(err.Error(), "\n", 2)[0])
}
