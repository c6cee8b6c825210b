package syncio

import (
	"bytes"
	"io"
	"sync"
)

// Writer writes each Write to W whole, one at a time.
type Writer struct {
	mu sync.Mutex
	W  io.Writer
}

func (w *Writer) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.W.Write(b)
}

// Buffer is a bytes.Buffer that goroutines may write and read at once.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
