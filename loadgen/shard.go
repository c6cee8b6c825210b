package loadgen

import (
	"fmt"
	"strconv"
	"strings"
)

// Shard is this process's share of a run spread over several machines:
// shard I of N runs the editors e with e mod N == I. Every shard lays out
// the same pages and windows from the run id, so their editors meet on
// the same pages, and their results merge exactly (metrics.Merge).
type Shard struct{ I, N int }

// ParseShard reads "i/n" with 0 <= i < n.
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("loadgen: shard %q: want i/n with 0 <= i < n, e.g. 0/2 and 1/2", s)
	}
	return Shard{I: i, N: n}, nil
}

func (s Shard) norm() Shard {
	if s.N < 1 {
		return Shard{0, 1}
	}
	return s
}

// String is "i/n".
func (s Shard) String() string {
	s = s.norm()
	return fmt.Sprintf("%d/%d", s.I, s.N)
}

// Has reports whether editor e (0-based) runs in this shard.
func (s Shard) Has(e int) bool {
	s = s.norm()
	return e%s.N == s.I
}

// Editors lists the editors of this shard out of total.
func (s Shard) Editors(total int) []int {
	var out []int
	for e := 0; e < total; e++ {
		if s.Has(e) {
			out = append(out, e)
		}
	}
	return out
}
