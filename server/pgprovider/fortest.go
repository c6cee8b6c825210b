package pgprovider

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// shared is the one Server per test binary behind ForTest.
var shared struct {
	once sync.Once
	mu   sync.Mutex
	srv  *Server
	err  error
}

// ForTest returns the DSN of a fresh database for this test, dropped in
// t.Cleanup. The first call in a test binary starts one shared Server with
// OptionsFromEnv plus Fast (fsync off); later calls reuse it. If no server
// can be started the test fails (t.Fatal with the full error listing what
// was tried) — it is never skipped.
//
// The shared server is stopped by StopShared, typically via RunTests from
// TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgprovider.RunTests(m)) }
//
// Without that it is left to process exit: a local cluster is then shut
// down and its temp dir removed by a small watchdog process that notices
// the test binary is gone (even after a crash or a `go test -timeout`
// kill); a docker container is removed by Ryuk if enabled, otherwise it
// stays until removed by hand (use RunTests with docker).
func ForTest(t testing.TB) string {
	t.Helper()
	shared.once.Do(func() {
		opts := OptionsFromEnv()
		opts.Fast = true
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		srv, err := Start(ctx, opts)
		shared.mu.Lock()
		shared.srv, shared.err = srv, err
		shared.mu.Unlock()
	})
	shared.mu.Lock()
	srv, err := shared.srv, shared.err
	shared.mu.Unlock()
	if err != nil {
		t.Fatalf("pgprovider.ForTest: cannot start PostgreSQL for tests:\n%v", err)
	}
	if srv == nil {
		t.Fatal("pgprovider.ForTest: the shared server was already stopped (StopShared)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn, drop, err := srv.NewDatabase(ctx, testDBName(t.Name()))
	if err != nil {
		t.Fatalf("pgprovider.ForTest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := drop(ctx); err != nil {
			t.Errorf("pgprovider.ForTest cleanup: %v", err)
		}
	})
	return dsn
}

// StopShared stops the server started by ForTest, if any. Later ForTest
// calls fail.
func StopShared(ctx context.Context) error {
	shared.once.Do(func() {}) // no server may start after this
	shared.mu.Lock()
	srv := shared.srv
	shared.srv = nil
	shared.mu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.Stop(ctx)
}

// RunTests runs m and then StopShared; use it from TestMain.
func RunTests(m *testing.M) int {
	code := m.Run()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := StopShared(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "pgprovider: stopping the shared test server:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// testDBName makes a readable, unique database name from a test name:
// t_<sanitised name, at most 40 bytes>_<time>_<random>.
func testDBName(testName string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(testName) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 40 {
			break
		}
	}
	return uniqueName("t_" + strings.Trim(b.String(), "_"))
}
