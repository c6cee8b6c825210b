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
	st, ok := ReadStat(pid)
	if !ok {
		return Proc{}, false
	}
	p := Proc{PID: pid, PPID: st.PPID, State: st.State}
	dir := "/proc/" + strconv.Itoa(pid)
	if b, err := os.ReadFile(dir + "/cmdline"); err == nil {
		p.Cmdline = strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	}
	p.Cwd, _ = os.Readlink(dir + "/cwd")
	return p, true
}

// Stat is what a harness reads of /proc/PID/stat.
type Stat struct {
	PPID  int
	Comm  string // the command's name, without the parentheses
	State string
	// Ticks is the CPU time (user and system, in clock ticks) the
	// process used; ChildTicks that of its children it has reaped.
	Ticks, ChildTicks uint64
}

// ReadStat reads pid's /proc/PID/stat: one read, no other file.
func ReadStat(pid int) (Stat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, false
	}
	return parseStat(string(b))
}

// parseStat reads "pid (comm) state ppid ... utime stime cutime cstime
// ..."; comm may hold spaces and parentheses.
func parseStat(s string) (Stat, bool) {
	i, j := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if i < 0 || j < i {
		return Stat{}, false
	}
	f := strings.Fields(s[j+1:])
	// f[0] is field 3 (state); utime..cstime are fields 14-17.
	if len(f) < 15 {
		return Stat{}, false
	}
	st := Stat{Comm: s[i+1 : j], State: f[0]}
	st.PPID, _ = strconv.Atoi(f[1])
	var t [4]uint64
	for k := range t {
		t[k], _ = strconv.ParseUint(f[11+k], 10, 64)
	}
	st.Ticks, st.ChildTicks = t[0]+t[1], t[2]+t[3]
	return st, true
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
