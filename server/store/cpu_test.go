package store

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cpuMeter reads the CPU time of this process and of the PostgreSQL
// backends serving a database (from /proc: the benchmarks run on the
// database's machine), so that a benchmark can report both per command.
type cpuMeter struct {
	st *Store
}

func (m cpuMeter) self() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// backends is the CPU time of the live backends of the store's database.
func (m cpuMeter) backends(tb testing.TB) time.Duration {
	rows, err := m.st.pool.Query(context.Background(),
		`SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
	if err != nil {
		tb.Fatal(err)
	}
	var total time.Duration
	tick := 100 // USER_HZ: 100 on Linux
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			tb.Fatal(err)
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue // another machine, or gone
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		k, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(u+k) * time.Second / time.Duration(tick)
	}
	return total
}
