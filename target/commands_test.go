package target

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The operator's commands run with sh -c, the instance's URL in the
// environment, and return once /healthz answers 200 again; a failing
// command, or a server that stays unhealthy, is an error naming the flag.
func TestRemoteCommands(t *testing.T) {
	var healthy atomic.Bool
	healthy.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" && healthy.Load() {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	dir := t.TempDir()
	ctx := context.Background()

	pgOnly := RemoteWith(srv.URL, []string{"t"}, RemoteCommands{RestartPostgres: "echo pg > " + filepath.Join(dir, "pg")})
	if _, ok := pgOnly.(Restarter); ok {
		t.Error("no --restart-command, yet the target restarts instances")
	}
	pr, ok := pgOnly.(PostgresRestarter)
	if !ok || !pr.CanRestartPostgres() {
		t.Fatal("a --postgres-restart-command target cannot restart Postgres")
	}
	if err := pr.RestartPostgres(ctx); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "pg")); string(b) != "pg\n" {
		t.Errorf("the Postgres command did not run: %q", b)
	}

	both := RemoteWith(srv.URL, []string{"t"}, RemoteCommands{RestartInstance: "echo $KBKIT_INSTANCE $KBKIT_INSTANCE_URL > " + filepath.Join(dir, "inst"),
		Timeout: time.Second})
	if err := both.(Restarter).RestartInstance(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "inst")); strings.TrimSpace(string(b)) != "0 "+srv.URL {
		t.Errorf("the instance command got %q", b)
	}
	if both.(PostgresRestarter).CanRestartPostgres() {
		t.Error("no --postgres-restart-command, yet the target restarts Postgres")
	}

	failing := RemoteWith(srv.URL, []string{"t"}, RemoteCommands{RestartInstance: "echo no such service >&2; exit 3", Timeout: time.Second})
	if err := failing.(Restarter).RestartInstance(ctx, 0); err == nil || !strings.Contains(err.Error(), "--restart-command") || !strings.Contains(err.Error(), "no such service") {
		t.Errorf("a failing command: %v", err)
	}
	healthy.Store(false)
	if err := both.(Restarter).RestartInstance(ctx, 0); err == nil || !strings.Contains(err.Error(), "not healthy") {
		t.Errorf("a server that stays unhealthy: %v", err)
	}
}
