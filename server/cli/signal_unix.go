//go:build unix

package cli

import (
	"os"
	"os/signal"
	"syscall"
)

// notifyProfileRestart delivers SIGUSR1 (restart --cpuprofile) to c.
func notifyProfileRestart(c chan<- os.Signal) { signal.Notify(c, syscall.SIGUSR1) }
