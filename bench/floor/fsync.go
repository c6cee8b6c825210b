package floor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/subspace/kbkit/internal/cputime"
)

// FsyncConfig is one fdatasync measurement.
type FsyncConfig struct {
	Dir      string        `json:"dir"`      // a directory on the disk to measure (a temporary file is made there)
	Size     int           `json:"size"`     // bytes written before each fdatasync (8 KiB: one WAL page)
	Duration time.Duration `json:"duration"` // measured
}

// FsyncResult is the rate of write + fdatasync on the disk of Dir.
type FsyncResult struct {
	Dir       string  `json:"dir"`
	Method    string  `json:"method"`
	Size      int     `json:"size"`
	Ops       int64   `json:"ops"`
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_second"`
	USPerOp   float64 `json:"us_per_op"`
	CPU       float64 `json:"cpu_seconds"`
}

// fsyncFileSize is the preallocated file the writes cycle through (a WAL
// segment's size): fdatasync then flushes data, not the file's size.
const fsyncFileSize = 16 << 20

// Fsync measures how many small write + fdatasync pairs per second the
// disk of cfg.Dir completes, in this process (one writer, as PostgreSQL's
// WAL flush is).
func Fsync(ctx context.Context, cfg FsyncConfig) (FsyncResult, error) {
	if cfg.Size <= 0 {
		cfg.Size = 8192
	}
	res := FsyncResult{Dir: cfg.Dir, Method: fsyncMethod, Size: cfg.Size}
	if cfg.Duration <= 0 || cfg.Size > fsyncFileSize {
		return res, fmt.Errorf("%w: fsync needs a duration > 0 and a size up to %d (got %+v)", errConfig, fsyncFileSize, cfg)
	}
	dir := cfg.Dir
	if dir == "" {
		dir = os.TempDir()
		res.Dir = dir
	}
	f, err := os.CreateTemp(dir, ".kbkit-floor-fsync-*")
	if err != nil {
		return res, err
	}
	defer func() {
		f.Close()
		os.Remove(f.Name())
	}()
	res.Dir, _ = filepath.Abs(dir)
	zero := make([]byte, 1<<20)
	for off := 0; off < fsyncFileSize; off += len(zero) {
		if _, err := f.Write(zero); err != nil {
			return res, err
		}
	}
	if err := f.Sync(); err != nil {
		return res, err
	}
	buf := make([]byte, cfg.Size)
	for i := range buf {
		buf[i] = byte(i)
	}
	var off int64
	c0, t0 := cputime.Seconds(), time.Now()
	end := t0.Add(cfg.Duration)
	for time.Now().Before(end) && ctx.Err() == nil {
		if _, err := f.WriteAt(buf, off); err != nil {
			return res, err
		}
		if err := fdatasync(f); err != nil {
			return res, err
		}
		res.Ops++
		off += int64(cfg.Size)
		if off+int64(cfg.Size) > fsyncFileSize {
			off = 0
		}
	}
	res.Seconds = time.Since(t0).Seconds()
	res.CPU = cputime.Seconds() - c0
	if res.Ops == 0 {
		return res, fmt.Errorf("floor: no fdatasync completed in %.1fs", res.Seconds)
	}
	res.OpsPerSec = float64(res.Ops) / res.Seconds
	res.USPerOp = 1e6 * res.Seconds / float64(res.Ops)
	return res, ctx.Err()
}
