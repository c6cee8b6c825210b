package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLongFunctions(t *testing.T) {
	var b strings.Builder
	b.WriteString("package p\n\nfunc short() {}\n\nfunc long() {\n")
	for i := 0; i < 10; i++ {
		b.WriteString("\t_ = 1\n")
	}
	b.WriteString("}\n")
	p := filepath.Join(t.TempDir(), "p.go")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	long, err := check([]string{p}, 12)
	if err != nil || len(long) != 0 {
		t.Fatalf("at most 12: %q %v", long, err)
	}
	long, err = check([]string{p}, 11)
	if err != nil || len(long) != 1 || !strings.HasPrefix(long[0], p+":5: long is 12 lines") {
		t.Fatalf("at most 11: got %q %v", long, err)
	}
}
