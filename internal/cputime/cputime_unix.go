//go:build unix

package cputime

import (
	"syscall"
	"time"
)

// Supported says whether Self reports this process's CPU time.
const Supported = true

func self() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
