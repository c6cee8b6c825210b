package wiresuite

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/subspace/kbkit/sim"
)

// startRestartable runs the reference server and returns an Env for it
// without a restart hook, and the function that restarts it gracefully.
func startRestartable(t *testing.T) (*Env, func(ctx context.Context) error) {
	t.Helper()
	env, e := startEmbedded(t, sim.EmbeddedOptions{Instances: 1})
	return env, func(ctx context.Context) error { return e.RestartInstance(ctx, 0) }
}

// An operator's restart hook over HTTP: POST restarts the server.
func restartHook(t *testing.T, restart func(ctx context.Context) error) string {
	t.Helper()
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		if restart == nil { // a hook that does nothing
			w.WriteHeader(http.StatusNoContent)
			return
		}
		go func() { _ = restart(context.Background()) }() // as an orchestrator would: asynchronously
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(hook.Close)
	return hook.URL
}

func TestReconnectByRestartURL(t *testing.T) {
	env, restart := startRestartable(t)
	env.Restart = RestartURL(restartHook(t, restart))
	results := run(t, env, `^protocol/reconnect$`)
	if r := results["protocol/reconnect"]; r.Status != Pass {
		t.Errorf("%s", describe(r))
	}
}

// The command is a signal to the process serving, as
// `kill -TERM $(cat server.pid)` under a supervisor would be.
func TestReconnectByRestartCommand(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the restart command signals this process with kill(1)")
	}
	env, restart := startRestartable(t)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	defer signal.Stop(sig)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-sig:
				_ = restart(context.Background())
			case <-done:
				return
			}
		}
	}()
	env.Restart = RestartCommand(fmt.Sprintf("kill -USR1 %d", os.Getpid()))
	results := run(t, env, `^protocol/reconnect$`)
	if r := results["protocol/reconnect"]; r.Status != Pass {
		t.Errorf("%s", describe(r))
	}
}

// A restart hook that does nothing (the server never shuts down), and a
// restart command that fails: protocol/reconnect fails, saying why.
func TestBrokenRestart(t *testing.T) {
	env, _ := startRestartable(t)
	env.EventTimeout = 2 * time.Second
	env.Restart = RestartURL(restartHook(t, nil))
	r := run(t, env, `^protocol/reconnect$`)["protocol/reconnect"]
	if r.Status != Fail || !strings.Contains(r.Message, "reconnect") {
		t.Errorf("a hook that does not restart: %s", describe(r))
	} else {
		t.Logf("failed as it should: %s", r.Message)
	}
	env.Restart = RestartCommand("echo no such service >&2; exit 3")
	r = run(t, env, `^protocol/reconnect$`)["protocol/reconnect"]
	if r.Status != Fail || !strings.Contains(r.Message, "no such service") {
		t.Errorf("a failing restart command: %s", describe(r))
	}
}
