//go:build unix

package cli

import (
	"bytes"
	"compress/gzip"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// SIGUSR1 restarts serve's CPU profile instead of killing the process,
// and the file holds a whole profile (gzip) once it stops.
func TestCPUProfileRestart(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "cpu.pprof"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stop, err := startCPUProfile(f, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
			stop()
			t.Fatal(err)
		}
	}
	stop()
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err == nil {
		_, err = io.Copy(io.Discard, zr)
	}
	if err != nil {
		t.Errorf("the profile (%d bytes) is not whole: %v", len(b), err)
	}
}
