package metrics

import (
	"sort"
	"time"
)

// TypeCounts are the counts of one command type.
type TypeCounts struct {
	Commands        int64 `json:"commands"`
	Committed       int64 `json:"committed"`
	Rejections      int64 `json:"rejections"`
	LocalRejections int64 `json:"local_rejections"`
	Errors          int64 `json:"errors"`
}

func (c *TypeCounts) add(o TypeCounts) {
	c.Commands += o.Commands
	c.Committed += o.Committed
	c.Rejections += o.Rejections
	c.LocalRejections += o.LocalRejections
	c.Errors += o.Errors
}

// TypeStats are one command type's counts and latencies (commit and echo;
// per-second precision, 2 significant digits, to keep a run's memory
// flat in the number of types).
type TypeStats struct {
	Counts TypeCounts `json:"counts"`
	Commit *Hist      `json:"commit"`
	Echo   *Hist      `json:"echo"`
}

func newTypeStats() *TypeStats {
	return &TypeStats{Commit: NewIntervalHist(), Echo: NewIntervalHist()}
}

func (t *TypeStats) merge(o *TypeStats) error {
	t.Counts.add(o.Counts)
	if err := t.Commit.Merge(o.Commit); err != nil {
		return err
	}
	return t.Echo.Merge(o.Echo)
}

// TypeNames returns the types of a result in report order: most
// operations first.
func (r *Result) TypeNames() []string {
	var out []string
	for n := range r.Types {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := r.Types[out[i]].Counts.Commands, r.Types[out[j]].Counts.Commands
		if a != b {
			return a > b
		}
		return out[i] < out[j]
	})
	return out
}

func (r *Recorder) typ(name string) *TypeStats {
	if r.types == nil {
		r.types = map[string]*TypeStats{}
	}
	t := r.types[name]
	if t == nil {
		t = newTypeStats()
		r.types[name] = t
	}
	return t
}

// TypeCount counts one operation of a command type by outcome: Commands,
// Committed, Rejections, LocalRejections or Errors (other counters are
// not kept per type).
func (r *Recorder) TypeCount(name string, k Counter) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c := &r.typ(name).Counts
	switch k {
	case Commands:
		c.Commands++
	case Committed:
		c.Committed++
	case Rejections:
		c.Rejections++
	case LocalRejections:
		c.LocalRejections++
	case Errors:
		c.Errors++
	}
}

// TypeLatency records a commit or echo latency of a command type.
func (r *Recorder) TypeLatency(name, metric string, d time.Duration) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.typ(name)
	switch metric {
	case Commit:
		t.Commit.Record(d)
	case Echo:
		t.Echo.Record(d)
	}
}

// InFlight samples the operations in flight at now: each second keeps
// its peak.
func (r *Recorder) InFlight(now time.Time, n int64) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sampled = true
	l := r.at(now)
	l.inflight = max(l.inflight, n)
}

func mergeTypes(into map[string]*TypeStats, from map[string]*TypeStats) error {
	for n, t := range from {
		if into[n] == nil {
			into[n] = newTypeStats()
		}
		if err := into[n].merge(t); err != nil {
			return err
		}
	}
	return nil
}
