package instance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/subspace/kbkit/server"
	"github.com/subspace/kbkit/server/pgprovider"
)

func TestMain(m *testing.M) { os.Exit(pgprovider.RunTests(m)) }

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// start starts an instance on a fresh database whose handler is wrapped
// to mark its answers, and fails the test if it ends up still serving.
func start(t *testing.T) (*Instance, string) {
	t.Helper()
	ln := listen(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang detector
	defer cancel()
	in, err := Start(ctx, ln, Config{
		DSN:    pgprovider.ForTest(t),
		Server: server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		Wrap: func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Wrapped", "1")
				h.ServeHTTP(w, r)
			})
		},
	})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		select {
		case <-in.Done():
		default:
			in.Kill()
			t.Error("the instance was still serving at the end of the test")
		}
	})
	return in, "http://" + ln.Addr().String()
}

func healthz(url string) (int, string, error) {
	resp, err := http.Get(url + "/healthz")
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("X-Wrapped"), nil
}

// An instance serves its server, wrapped, on the listener with its store
// open; each way of ending it stops the serving, reports
// http.ErrServerClosed and closes the store.
func TestStartServesUntilItEnds(t *testing.T) {
	for _, end := range []struct {
		name string
		do   func(*Instance)
	}{
		{"Shutdown", func(in *Instance) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			in.Shutdown(ctx, nil)
		}},
		{"Kill", (*Instance).Kill},
	} {
		t.Run(end.name, func(t *testing.T) {
			in, url := start(t)
			status, wrapped, err := healthz(url)
			if err != nil || status != http.StatusOK || wrapped != "1" {
				t.Fatalf("GET /healthz: %d, X-Wrapped %q, %v", status, wrapped, err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if _, err := in.Store.PairDevice(ctx, "ws"); err != nil {
				t.Fatalf("pairing on the instance's store: %v", err)
			}
			end.do(in)
			<-in.Done()
			if err := in.Err(); !errors.Is(err, http.ErrServerClosed) {
				t.Errorf("Err after %s: %v, want http.ErrServerClosed", end.name, err)
			}
			if _, _, err := healthz(url); err == nil {
				t.Errorf("GET /healthz answered after %s", end.name)
			}
			if _, err := in.Store.PairDevice(ctx, "ws"); err == nil {
				t.Errorf("the store still works after %s", end.name)
			}
		})
	}
}

// A database that cannot be reached is an error, and the listener is
// left to the caller, open.
func TestStartBadDSN(t *testing.T) {
	dead := listen(t)
	port := dead.Addr().(*net.TCPAddr).Port
	dead.Close()
	ln := listen(t)
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn := fmt.Sprintf("postgres://kbkit@127.0.0.1:%d/kbkit?sslmode=disable&connect_timeout=5", port)
	in, err := Start(ctx, ln, Config{DSN: dsn})
	if err == nil {
		in.Kill()
		t.Fatal("Start on a database nobody listens for succeeded")
	}
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("the listener was closed: %v", err)
	}
	c.Close()
}
