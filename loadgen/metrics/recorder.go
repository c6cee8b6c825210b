package metrics

import (
	"sort"
	"sync"
	"time"
)

// Latency metric names, as thresholds and reports spell them.
const (
	Commit      = "commit"      // POST kb.command to its response
	Echo        = "echo"        // intended start to the echo at the sending window
	Fanout      = "fanout"      // intended start to the echo at every other window of the page
	Convergence = "convergence" // end of the load to the window being at its page's head
)

// Latencies lists the latency metrics in report order.
var Latencies = []string{Commit, Echo, Fanout, Convergence}

// IntervalLatencies are the metrics charted per second.
var IntervalLatencies = []string{Commit, Echo, Fanout}

// Counter names one of the counts.
type Counter int

// The counters.
const (
	Commands        Counter = iota // operations started (a command sent, or refused by the window)
	Committed                      // commands the server committed
	Rejections                     // commands the server rejected (a decision)
	LocalRejections                // edits the window refused before sending
	Retries                        // resends of an undecided command, same id
	Refetches                      // kb.page snapshots after a gap
	Dropped                        // operations the open model could not start on time
	Errors                         // failures, by kind
	Connects                       // WebSocket subscriptions opened
	Reconnects                     // subscriptions reopened after they ended
	Due                            // operations the pacer made due (open model target)
	Echoes                         // events of measured commands applied by a window (all windows)
)

// Counts are the run's counters.
type Counts struct {
	Commands        int64 `json:"commands"`
	Committed       int64 `json:"committed"`
	Rejections      int64 `json:"rejections"`
	LocalRejections int64 `json:"local_rejections"`
	Retries         int64 `json:"retries"`
	Refetches       int64 `json:"refetches"`
	Dropped         int64 `json:"dropped"`
	Errors          int64 `json:"errors"`
	Connects        int64 `json:"connects"`
	Reconnects      int64 `json:"reconnects"`
	Due             int64 `json:"due"`
	Echoes          int64 `json:"echoes"`
}

func (c *Counts) field(k Counter) *int64 {
	switch k {
	case Commands:
		return &c.Commands
	case Committed:
		return &c.Committed
	case Rejections:
		return &c.Rejections
	case LocalRejections:
		return &c.LocalRejections
	case Retries:
		return &c.Retries
	case Refetches:
		return &c.Refetches
	case Dropped:
		return &c.Dropped
	case Errors:
		return &c.Errors
	case Connects:
		return &c.Connects
	case Reconnects:
		return &c.Reconnects
	case Due:
		return &c.Due
	case Echoes:
		return &c.Echoes
	}
	panic("metrics: unknown counter")
}

// Get returns one counter.
func (c Counts) Get(k Counter) int64 { return *c.field(k) }

// Add adds every counter of o.
func (c *Counts) Add(o Counts) {
	for k := Commands; k <= Echoes; k++ {
		*c.field(k) += o.Get(k)
	}
}

// CounterNames maps the names thresholds use to counters.
var CounterNames = map[string]Counter{
	"commands": Commands, "committed": Committed, "rejections": Rejections,
	"local_rejections": LocalRejections, "retries": Retries, "refetches": Refetches,
	"dropped": Dropped, "errors": Errors, "connects": Connects, "reconnects": Reconnects,
	"due": Due, "echoes": Echoes,
}

// Interval is one second of the run, for charts: the counts of the events
// that happened in it and the latencies recorded in it.
type Interval struct {
	Unix    int64                `json:"unix"`
	Counts  Counts               `json:"counts"`
	Latency map[string]*Snapshot `json:"latency"`
	// InFlight is the peak of operations in flight sampled in the second
	// (summed over shards; see Result.InFlightSampled).
	InFlight int64 `json:"in_flight,omitempty"`
}

// live is the interval a recorder is filling.
type live struct {
	unix     int64
	counts   Counts
	lat      map[string]*Hist
	inflight int64
}

func newLive(unix int64) *live {
	l := &live{unix: unix, lat: map[string]*Hist{}}
	for _, n := range IntervalLatencies {
		l.lat[n] = NewIntervalHist()
	}
	return l
}

func (l *live) freeze() Interval {
	iv := Interval{Unix: l.unix, Counts: l.counts, Latency: map[string]*Snapshot{}, InFlight: l.inflight}
	for n, h := range l.lat {
		iv.Latency[n] = h.Snapshot()
	}
	return iv
}

// Recorder collects one worker's metrics: run histograms, counters and
// per-second intervals. Workers record into their own recorder, so the
// lock is rarely contended; Collect merges them. Methods are safe for
// concurrent use.
type Recorder struct {
	mu         sync.Mutex
	lat        map[string]*Hist
	counts     Counts
	errors     map[string]int64
	rejections map[string]int64
	cur        *live
	done       []Interval
	// prev keeps the last closed intervals unfrozen for Recent.
	prev []*live
	// types are the counts and latencies by command type (types.go);
	// sampled is set once InFlight was called.
	types   map[string]*TypeStats
	sampled bool
}

// recentKeep is how many closed intervals Recent can still see.
const recentKeep = 10

// Discard is a recorder that records nothing (a nil *Recorder): for work
// outside the measured window, such as operations of the warm-up.
var Discard *Recorder

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder {
	r := &Recorder{lat: map[string]*Hist{}, errors: map[string]int64{}, rejections: map[string]int64{}}
	for _, n := range Latencies {
		r.lat[n] = NewHist()
	}
	return r
}

// at returns the interval of now, closing the previous one. Samples that
// arrive late for an interval already closed (their goroutine read the
// clock just before a second turned) count in the current one.
func (r *Recorder) at(now time.Time) *live {
	u := now.Unix()
	switch {
	case r.cur == nil:
		r.cur = newLive(u)
	case u > r.cur.unix:
		r.done = append(r.done, r.cur.freeze())
		r.prev = append(r.prev, r.cur)
		if len(r.prev) > recentKeep {
			r.prev = r.prev[1:]
		}
		r.cur = newLive(u)
	}
	return r.cur
}

// Latency records one latency of metric name, observed at now.
func (r *Recorder) Latency(name string, now time.Time, d time.Duration) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lat[name].Record(d)
	if h, ok := r.at(now).lat[name]; ok {
		h.Record(d)
	}
}

// Count adds n to counter k at now.
func (r *Recorder) Count(k Counter, now time.Time, n int64) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.counts.field(k) += n
	*r.at(now).counts.field(k) += n
}

// Error counts a failure of the given kind.
func (r *Recorder) Error(kind string, now time.Time) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts.Errors++
	r.errors[kind]++
	r.at(now).counts.Errors++
}

// Rejection counts a rejection with its code.
func (r *Recorder) Rejection(code string, now time.Time) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts.Rejections++
	r.rejections[code]++
	r.at(now).counts.Rejections++
}

// Reset forgets everything recorded so far (a warm-up), except the
// connects: windows subscribe during setup, before any warm-up.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for n := range r.lat {
		r.lat[n] = NewHist()
	}
	r.counts = Counts{Connects: r.counts.Connects}
	clear(r.errors)
	clear(r.rejections)
	r.cur, r.done, r.prev = nil, nil, nil
	r.types = nil
}

// Recent merges the intervals from second since on (the current one
// included, at most the last ten seconds): the live console's view.
func (r *Recorder) Recent(since int64, into map[string]*Hist, counts *Counts) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range append(r.prev[:len(r.prev):len(r.prev)], r.cur) {
		if l == nil || l.unix < since {
			continue
		}
		counts.Add(l.counts)
		for n, h := range l.lat {
			if into[n] == nil {
				into[n] = NewIntervalHist()
			}
			_ = into[n].Merge(h)
		}
	}
}

// Totals returns the counters so far.
func (r *Recorder) Totals() Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts
}

// Collect merges recorders into the metrics part of a Result.
func Collect(recs []*Recorder) (*Result, error) {
	res := &Result{Version: Version, Latency: map[string]*Hist{}, Errors: map[string]int64{}, Rejections: map[string]int64{}}
	for _, n := range Latencies {
		res.Latency[n] = NewHist()
	}
	byUnix := map[int64]*Interval{}
	for _, r := range recs {
		r.mu.Lock()
		for n, h := range r.lat {
			if err := res.Latency[n].Merge(h); err != nil {
				r.mu.Unlock()
				return nil, err
			}
		}
		res.Counts.Add(r.counts)
		if res.Types == nil {
			res.Types = map[string]*TypeStats{}
		}
		if err := mergeTypes(res.Types, r.types); err != nil {
			r.mu.Unlock()
			return nil, err
		}
		res.InFlightSampled = res.InFlightSampled || r.sampled
		for k, v := range r.errors {
			res.Errors[k] += v
		}
		for k, v := range r.rejections {
			res.Rejections[k] += v
		}
		ivs := append([]Interval(nil), r.done...)
		if r.cur != nil {
			ivs = append(ivs, r.cur.freeze())
		}
		r.mu.Unlock()
		for _, iv := range ivs {
			if err := mergeInterval(byUnix, iv); err != nil {
				return nil, err
			}
		}
	}
	res.Intervals = sortedIntervals(byUnix)
	return res, nil
}

func mergeInterval(byUnix map[int64]*Interval, iv Interval) error {
	t := byUnix[iv.Unix]
	if t == nil {
		t = &Interval{Unix: iv.Unix, Latency: map[string]*Snapshot{}}
		byUnix[iv.Unix] = t
	}
	t.Counts.Add(iv.Counts)
	t.InFlight += iv.InFlight
	for n, s := range iv.Latency {
		if t.Latency[n] == nil {
			t.Latency[n] = s
			continue
		}
		a, err := t.Latency[n].Hist()
		if err != nil {
			return err
		}
		b, err := s.Hist()
		if err != nil {
			return err
		}
		if err := a.Merge(b); err != nil {
			return err
		}
		t.Latency[n] = a.Snapshot()
	}
	return nil
}

func sortedIntervals(byUnix map[int64]*Interval) []Interval {
	out := make([]Interval, 0, len(byUnix))
	for _, iv := range byUnix {
		out = append(out, *iv)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Unix < out[j].Unix })
	return out
}
