//go:build !unix

package cli

import "os"

// notifyProfileRestart does nothing where there is no SIGUSR1: the
// profile covers the whole run.
func notifyProfileRestart(chan<- os.Signal) {}
