package sim

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/subspace/kbkit/server/pgprovider"
)

// A server kbkit did not start, with an operator's --restart-command:
// --faults draws instance restarts against it, the command runs with the
// instance's URL, and the seeds pass. (The command asks this test, over
// HTTP, to restart the embedded instance behind the "remote" URL.)
func TestRemoteRestartCommand(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl for the restart command")
	}
	ctx := context.Background()
	e, err := NewEmbedded(ctx, pgprovider.ForTest(t), EmbeddedOptions{Instances: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	var restarts atomic.Int32
	var mu sync.Mutex
	var urls []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		urls = append(urls, r.URL.Query().Get("url"))
		mu.Unlock()
		if err := e.RestartInstance(r.Context(), 0); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		restarts.Add(1)
	}))
	defer hook.Close()
	tokens, err := e.Devices(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	remote := RemoteWith(e.Endpoints()[0], tokens, RemoteCommands{
		RestartInstance: `curl -sf -X POST "` + hook.URL + `/?url=$KBKIT_INSTANCE_URL"`})
	if _, ok := remote.(PostgresRestarter); ok && remote.(PostgresRestarter).CanRestartPostgres() {
		t.Error("no --postgres-restart-command, yet the target says it can restart Postgres")
	}
	reports := Run(t, remote, Options{Seed: 7, Seeds: 6, Steps: 150, Faults: true})
	drawn := 0
	for _, r := range reports {
		t.Logf("seed %d: %s", r.Seed, r.Faults)
		if strings.Contains(r.Faults, "restart-instance=true") {
			drawn++
		}
	}
	if drawn == 0 || restarts.Load() == 0 {
		t.Fatalf("seeds drawing an instance restart: %d; restarts the command made: %d", drawn, restarts.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	if urls[0] != e.Endpoints()[0] {
		t.Errorf("the command got $KBKIT_INSTANCE_URL %q, want %q", urls[0], e.Endpoints()[0])
	}
}
