// Command cpuhog keeps CPUs busy for scripts/test-busy.sh where stress-ng
// is not installed: -cpus goroutines spin until it gets SIGINT or SIGTERM,
// -for runs out, or its parent process is gone (a script killed with
// SIGKILL leaves no hog behind).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"
)

func main() {
	cpus := flag.Int("cpus", runtime.NumCPU(), "goroutines that spin, one per CPU to keep busy")
	limit := flag.Duration("for", 2*time.Hour, "stop after this long whatever happens")
	flag.Parse()
	if *cpus < 1 || *limit <= 0 {
		fmt.Fprintln(os.Stderr, "cpuhog: -cpus must be at least 1 and -for positive")
		os.Exit(2)
	}
	runtime.GOMAXPROCS(*cpus + 1)
	for range *cpus {
		go func() {
			x := uint64(1)
			for {
				x = x*6364136223846793005 + 1442695040888963407
			}
		}()
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	parent := os.Getppid()
	end := time.After(*limit)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-end:
			return
		case <-tick.C:
			if os.Getppid() != parent {
				return
			}
		}
	}
}
