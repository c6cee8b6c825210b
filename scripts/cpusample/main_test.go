package main

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// The columns read what they name: this process's CPU through -serve-pid,
// the machine's busy ticks, and nothing for a file that names no process
// or a postmaster that is none.
func TestColumns(t *testing.T) {
	f := filepath.Join(t.TempDir(), "serve.pid")
	if err := os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Busy work until this process's own ticks move (on a machine busy
	// with other work that takes longer than on a quiet one: a minute is
	// a hang detector).
	m0, s0 := machineTicks(), serveTicks(f)
	s1 := s0
	for deadline := time.Now().Add(time.Minute); s1 <= s0 && time.Now().Before(deadline); s1 = serveTicks(f) {
		for spin := time.Now().Add(20 * time.Millisecond); time.Now().Before(spin); {
		}
	}
	m1 := machineTicks()
	if s1 <= s0 || m1 <= m0 {
		t.Fatalf("busy work: serve ticks %d -> %d, machine ticks %d -> %d", s0, s1, m0, m1)
	}
	if m1-m0 < s1-s0 {
		t.Fatalf("the machine (%d ticks) used less than one of its processes (%d)", m1-m0, s1-s0)
	}
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if v := serveTicks(f); v != 0 {
		t.Fatalf("an empty pid file read %d ticks", v)
	}
	if v := postgresTicks(os.Getpid()); v != 0 {
		t.Fatalf("a postmaster that is not postgres read %d ticks", v)
	}
}
