// Package procs finds and ends the processes a harness started, from
// /proc: a postmaster's backends are each their own session (setsid), so
// neither a process-group kill nor the death of their parent ends one that
// is stopped (SIGSTOP); they must be found and killed one by one.
//
//	procs.KillTree(postmasterPid)     // the postmaster and every backend
//	left, _ := procs.Under("/tmp/x")  // what still runs in or on /tmp/x
package procs

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Proc is one process as /proc shows it.
type Proc struct {
	PID, PPID int
	State     string // R, S, D, T (stopped), Z (zombie), ...
	Cmdline   string
	Cwd       string
}

func (p Proc) String() string {
	return strconv.Itoa(p.PID) + " (parent " + strconv.Itoa(p.PPID) + ", state " + p.State + ", cwd " + p.Cwd + "): " + p.Cmdline
}

// ErrNoProc is returned where /proc cannot be read (not Linux).
var ErrNoProc = errors.New("procs: /proc is not readable")

// All lists the processes of the machine.
func All() ([]Proc, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, ErrNoProc
	}
	var out []Proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := read(pid); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

func read(pid int) (Proc, bool) {
	dir := "/proc/" + strconv.Itoa(pid)
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return Proc{}, false
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return Proc{}, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return Proc{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	p := Proc{PID: pid, PPID: ppid, State: f[0]}
	if b, err := os.ReadFile(dir + "/cmdline"); err == nil {
		p.Cmdline = strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	}
	p.Cwd, _ = os.Readlink(dir + "/cwd")
	return p, true
}

// Descendants lists the processes below pid: its children, theirs, ...
func Descendants(pid int) []int {
	all, err := All()
	if err != nil {
		return nil
	}
	kids := map[int][]int{}
	for _, p := range all {
		kids[p.PPID] = append(kids[p.PPID], p.PID)
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		next := queue[0]
		queue = queue[1:]
		for _, k := range kids[next] {
			out = append(out, k)
			queue = append(queue, k)
		}
	}
	return out
}

// WaitGone waits until none of pids runs (gone or a zombie), at most d;
// it reports whether they all ended.
func WaitGone(pids []int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		alive := false
		for _, pid := range pids {
			if p, ok := read(pid); ok && p.State != "Z" {
				alive = true
				break
			}
		}
		if !alive {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Under lists the live processes (not zombies) whose working directory or
// command line lies in dir: what a harness that kept its files in dir
// left running.
func Under(dir string) ([]Proc, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	all, err := All()
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var out []Proc
	for _, p := range all {
		if p.PID == self || p.State == "Z" {
			continue
		}
		if within(p.Cwd, dir) || strings.Contains(p.Cmdline, dir+"/") || strings.HasSuffix(p.Cmdline, dir) {
			out = append(out, p)
		}
	}
	return out, nil
}

func within(path, dir string) bool {
	path = strings.TrimSuffix(path, " (deleted)")
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// Usage is what one process holds at a moment.
type Usage struct {
	// RSS is the resident set size in bytes.
	RSS int64
	// FDs counts open file descriptors; Sockets those that are sockets
	// (its open connections: TCP to clients and Postgres, and listeners).
	FDs, Sockets int
}

// UsageOf reads pid's resident memory and descriptors from /proc.
func UsageOf(pid int) (Usage, error) {
	dir := "/proc/" + strconv.Itoa(pid)
	b, err := os.ReadFile(dir + "/status")
	if err != nil {
		return Usage{}, err
	}
	var u Usage
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				u.RSS = kb << 10
			}
		}
	}
	ents, err := os.ReadDir(dir + "/fd")
	if err != nil {
		return Usage{}, err
	}
	for _, e := range ents {
		u.FDs++
		if l, err := os.Readlink(dir + "/fd/" + e.Name()); err == nil && strings.HasPrefix(l, "socket:") {
			u.Sockets++
		}
	}
	return u, nil
}
