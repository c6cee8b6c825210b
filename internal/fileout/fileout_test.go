package fileout

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteWholeOrNothing(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok")
	if err := Write(ok, func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err }); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(ok); err != nil || string(b) != "x" {
		t.Fatalf("read %q, %v", b, err)
	}
	bad := filepath.Join(dir, "bad")
	boom := errors.New("boom")
	if err := Write(bad, func(w io.Writer) error { io.WriteString(w, "half"); return boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Fatalf("a failed write left %s (%v)", bad, err)
	}
}
