// Command cpusample is the CPU sampler of the benchmarks
// (scripts/lib/bench.sh): every -every it prints one line,
//
//	EPOCH POSTGRES SERVE MACHINE
//
// the wall clock in seconds, then cumulative CPU clock ticks: of one
// PostgreSQL server (its postmaster's own and its reaped children's, plus
// every live child's), of the process whose pid the file -serve-pid holds
// (0 while it is empty), and the machine's busy ticks (/proc/stat: all but
// idle and iowait). It forks nothing, so that its own CPU is not taken
// from the loads it measures (a shell loop with cat and awk forks a few
// processes a sample). It ends on SIGTERM or SIGINT, and when
// the process that started it is gone.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/subspace/kbkit/internal/procs"
)

func main() {
	pm := flag.Int("postmaster", 0, "pid of the PostgreSQL postmaster (0: none, the column reads 0)")
	servePid := flag.String("serve-pid", "", "file holding the pid of the server process (empty or absent: the column reads 0)")
	every := flag.Duration("every", 200*time.Millisecond, "interval between samples")
	flag.Parse()
	if *every <= 0 {
		fmt.Fprintln(os.Stderr, "cpusample: -every must be positive")
		os.Exit(2)
	}
	if _, err := os.Stat("/proc/stat"); err != nil {
		fmt.Fprintln(os.Stderr, "cpusample: /proc/stat is not readable: the sampler needs Linux")
		os.Exit(2)
	}
	parent := os.Getppid()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	out := bufio.NewWriter(os.Stdout)
	tick := time.NewTicker(*every)
	defer tick.Stop()
	for {
		now := time.Now()
		fmt.Fprintf(out, "%d.%09d %d %d %d\n", now.Unix(), now.Nanosecond(), postgresTicks(*pm), serveTicks(*servePid), machineTicks())
		if err := out.Flush(); err != nil {
			os.Exit(1) // the reader is gone
		}
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		if os.Getppid() != parent {
			return // orphaned: the run that started it ended without stopping it
		}
	}
}

// postgresTicks is the CPU of the postmaster pm and its children named
// postgres (its backends and workers).
func postgresTicks(pm int) uint64 {
	if pm == 0 {
		return 0
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var sum uint64
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, ok := procs.ReadStat(pid)
		if !ok || st.Comm != "postgres" || (pid != pm && st.PPID != pm) {
			continue
		}
		sum += st.Ticks + st.ChildTicks
	}
	return sum
}

// serveTicks is the CPU of the process named in file, read each time (the
// benchmark runs one server after another and empties the file between).
func serveTicks(file string) uint64 {
	if file == "" {
		return 0
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	st, ok := procs.ReadStat(pid)
	if !ok {
		return 0
	}
	return st.Ticks
}

// machineTicks is /proc/stat's busy ticks: user, nice, system, irq,
// softirq and steal.
func machineTicks() uint64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	var sum uint64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		v, _ := strconv.ParseUint(f[i], 10, 64)
		sum += v
	}
	return sum
}
