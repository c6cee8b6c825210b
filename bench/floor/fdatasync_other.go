//go:build !linux

package floor

import "os"

// fdatasync is a full fsync where the platform has no fdatasync: the
// figure then counts metadata flushes too.
func fdatasync(f *os.File) error { return f.Sync() }

const fsyncMethod = "write+fsync"
