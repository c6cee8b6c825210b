package floor

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdatasync flushes f's data (not its metadata), as PostgreSQL's WAL
// flush does on Linux.
func fdatasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }

const fsyncMethod = "write+fdatasync"
