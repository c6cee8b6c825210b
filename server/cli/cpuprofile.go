package cli

import (
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"sync"
)

// startCPUProfile writes a CPU profile to f until the returned stop is
// called; SIGUSR1 (where there is one) starts it afresh, truncating f, so
// that a load generator's setup can be left out. A failed restart is
// logged on log and leaves no profile running.
func startCPUProfile(f *os.File, log *slog.Logger) (stop func(), err error) {
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, err
	}
	var mu sync.Mutex
	stopped := false
	restart := make(chan os.Signal, 1)
	notifyProfileRestart(restart)
	go func() {
		for range restart {
			mu.Lock()
			if !stopped {
				pprof.StopCPUProfile()
				if _, err := f.Seek(0, io.SeekStart); err == nil && f.Truncate(0) == nil {
					if err := pprof.StartCPUProfile(f); err != nil {
						log.Warn("--cpuprofile: restart", "err", err)
					}
				}
			}
			mu.Unlock()
		}
	}()
	return func() {
		signal.Stop(restart)
		mu.Lock()
		stopped = true
		pprof.StopCPUProfile()
		mu.Unlock()
	}, nil
}
