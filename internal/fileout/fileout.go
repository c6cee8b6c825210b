package fileout

import (
	"io"
	"os"
)

// Write creates path and writes it through fn; a failed write leaves no
// file.
func Write(path string, fn func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}
