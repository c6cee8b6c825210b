package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// Version is the version of the JSON result format.
const Version = 1

// RunInfo describes the run that produced a result.
type RunInfo struct {
	Workload string `json:"workload"`
	Model    string `json:"model"` // open or closed
	// Commands is the editors' transport for commands: "http" or "ws"
	// (a mutation on the window's WebSocket); empty in results written
	// before it was recorded, which were all http.
	Commands       string  `json:"commands,omitempty"`
	Rate           float64 `json:"rate,omitempty"`
	Stages         string  `json:"stages,omitempty"`
	Editors        int     `json:"editors"`
	Pages          int     `json:"pages"`
	WindowsPerPage int     `json:"windows_per_page"`
	Think          string  `json:"think,omitempty"`
	Duration       string  `json:"duration"`
	Warmup         string  `json:"warmup,omitempty"`
	Server         string  `json:"server"` // URL, or "embedded"
	Seed           int64   `json:"seed"`
	RunID          string  `json:"run_id"`
	// Generator is what drove the editors when it was not kbkit loadgen
	// (the k6 extension writes "k6 (SCENARIO EXECUTOR, ...)"); its
	// schedule is then not in Rate, Stages or Think.
	Generator string `json:"generator,omitempty"`
}

// Check is one threshold's outcome.
type Check struct {
	Expr   string `json:"expr"`
	Actual string `json:"actual"`
	Pass   bool   `json:"pass"`
}

// Result is one run (or the merge of several shards of a run): the JSON
// that `kbkit loadgen run --json` writes and `kbkit loadgen report` reads.
type Result struct {
	Version int     `json:"version"`
	Run     RunInfo `json:"run"`
	// Shards lists the shards merged into this result ("i/n", or a k6
	// execution segment).
	Shards []string `json:"shards"`
	// EditorsRan lists the editors (0-based, of Run.Editors) the shards
	// ran, in order; Merge refuses an editor run by two shards.
	EditorsRan []int `json:"editors_ran,omitempty"`
	// Start and End bound the load (setup and convergence excluded), on
	// the wall clock.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// PausedSeconds is how far the wall clock ran ahead of the monotonic
	// clock over the load, when it is at least PauseThreshold (SetSpan):
	// the time the machine was paused (a virtual machine snapshotted or
	// migrated, a host suspended), during which no process ran and the
	// monotonic clock stood still. It is left out of Seconds; the load's
	// figures around it are not those of a running machine (caches cold,
	// timers late), so a benchmark runs such a load again.
	PausedSeconds float64          `json:"paused_seconds,omitempty"`
	Latency       map[string]*Hist `json:"latency"`
	Counts        Counts           `json:"counts"`
	Errors        map[string]int64 `json:"errors_by_kind"`
	Rejections    map[string]int64 `json:"rejections_by_code"`
	Intervals     []Interval       `json:"intervals"`
	Checks        []Check          `json:"thresholds,omitempty"`
	// CPUSeconds is the CPU time this process used during the load: the
	// generator's, and the server's when it is embedded.
	CPUSeconds float64 `json:"cpu_seconds"`
	// Types are the counts and latencies by command type (absent in
	// results written before they were recorded).
	Types map[string]*TypeStats `json:"by_type,omitempty"`
	// InFlightSampled says the intervals' InFlight was sampled (every
	// shard's, in a merge): otherwise it is unknown, not zero.
	InFlightSampled bool `json:"in_flight_sampled,omitempty"`
	// Summary repeats derived figures for scripts (jq); it is rewritten
	// on every Write and ignored on Read.
	Summary *Summary `json:"summary,omitempty"`

	// mono is the load's span on the monotonic clock, when SetSpan was
	// given times of this process.
	mono time.Duration
}

// Summary is what scripts read: the rate and the percentiles in ms.
type Summary struct {
	Seconds float64                       `json:"seconds"`
	Rate    float64                       `json:"rate"`
	Latency map[string]map[string]float64 `json:"latency_ms"`
}

func (r *Result) summary() *Summary {
	s := &Summary{Seconds: r.Seconds(), Rate: r.Rate(), Latency: map[string]map[string]float64{}}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for _, n := range Latencies {
		h := r.Hist(n)
		s.Latency[n] = map[string]float64{"count": float64(h.Count()), "p50": ms(h.Quantile(50)), "p90": ms(h.Quantile(90)),
			"p99": ms(h.Quantile(99)), "p99.9": ms(h.Quantile(99.9)), "max": ms(h.Max())}
	}
	return s
}

// PauseThreshold is the least gap between the wall clock and the
// monotonic clock over a load that SetSpan counts as a pause: NTP slews
// the wall clock by at most 0.5 ms a second, and a step of the wall clock
// by the machine's time service is rare; a paused virtual machine's
// clocks part by the length of the pause.
const PauseThreshold = time.Second

// SetSpan sets Start and End, the load's bounds, and PausedSeconds from
// the two clocks' readings in them: start and end must come from
// time.Now in this process, so that they carry a monotonic reading (else
// no pause can be told and none is counted).
func (r *Result) SetSpan(start, end time.Time) {
	r.Start, r.End = start, end
	r.mono = end.Sub(start)
	r.PausedSeconds = pausedBy(end.Round(0).Sub(start.Round(0)), r.mono)
}

// pausedBy is the pause, in seconds, of a span the wall clock measured as
// wall and the monotonic clock as mono: their gap when the wall clock ran
// ahead by PauseThreshold or more, else 0 (a wall clock stepped back is
// no pause).
func pausedBy(wall, mono time.Duration) float64 {
	if gap := wall - mono; gap >= PauseThreshold {
		return gap.Seconds()
	}
	return 0
}

// Seconds is the length of the load in seconds: on the monotonic clock
// in the run's process (SetSpan), else (a result read from JSON, whose
// times carry no monotonic reading, or a merge) the wall clock's span
// less the machine's pause (PausedSeconds).
func (r *Result) Seconds() float64 {
	if r.mono > 0 {
		return r.mono.Seconds()
	}
	return r.End.Round(0).Sub(r.Start.Round(0)).Seconds() - r.PausedSeconds
}

// Rate is the committed commands per second over the load.
func (r *Result) Rate() float64 {
	if s := r.Seconds(); s > 0 {
		return float64(r.Counts.Committed) / s
	}
	return 0
}

// Hist returns a latency histogram (empty when absent).
func (r *Result) Hist(name string) *Hist {
	if h := r.Latency[name]; h != nil {
		return h
	}
	return NewHist()
}

// Write encodes the result as one line of JSON (jq formats it).
func (r *Result) Write(w io.Writer) error {
	r.Summary = r.summary()
	return json.NewEncoder(w).Encode(r)
}

// WriteFile writes the result to path.
func (r *Result) WriteFile(path string) error {
	var b bytes.Buffer
	if err := r.Write(&b); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// Read decodes a result, refusing unknown fields and other versions.
func Read(rd io.Reader) (*Result, error) {
	dec := json.NewDecoder(rd)
	dec.DisallowUnknownFields()
	var r Result
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("metrics: decode result: %w", err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		return nil, errors.New("metrics: decode result: trailing data")
	}
	if r.Version != Version {
		return nil, fmt.Errorf("metrics: result version %d, want %d", r.Version, Version)
	}
	if r.Latency == nil {
		r.Latency = map[string]*Hist{}
	}
	for n, t := range r.Types {
		if t == nil {
			return nil, fmt.Errorf("metrics: decode result: by_type %q is null", n)
		}
		if t.Commit == nil {
			t.Commit = NewIntervalHist()
		}
		if t.Echo == nil {
			t.Echo = NewIntervalHist()
		}
	}
	r.Summary = nil
	return &r, nil
}

// MissingEditors lists the editors of the run no shard ran (none when
// the result does not list the editors it ran).
func (r *Result) MissingEditors() []int {
	if len(r.EditorsRan) == 0 {
		return nil
	}
	ran := map[int]bool{}
	for _, e := range r.EditorsRan {
		ran[e] = true
	}
	var out []int
	for e := 0; e < r.Run.Editors; e++ {
		if !ran[e] {
			out = append(out, e)
		}
	}
	return out
}

// ReadFile reads a result file.
func ReadFile(path string) (*Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// Merge combines the results of the shards of one run. Histograms and
// counters add exactly; intervals are aligned on wall-clock seconds; the
// load spans from the earliest start to the latest end. A shard given
// twice is refused, since it would count its operations twice.
func Merge(rs ...*Result) (*Result, error) {
	if len(rs) == 0 {
		return nil, errors.New("metrics: nothing to merge")
	}
	if len(rs) == 1 {
		return rs[0], nil
	}
	out := &Result{Version: Version, Run: rs[0].Run, Latency: map[string]*Hist{},
		Errors: map[string]int64{}, Rejections: map[string]int64{}}
	seen := map[string]bool{}
	ran := map[int]bool{}
	byUnix := map[int64]*Interval{}
	out.InFlightSampled = true
	typed := true // every shard has types: else a merge cannot have them
	for i, r := range rs {
		out.InFlightSampled = out.InFlightSampled && r.InFlightSampled
		typed = typed && r.Types != nil
		if r.Types != nil {
			if out.Types == nil {
				out.Types = map[string]*TypeStats{}
			}
			if err := mergeTypes(out.Types, r.Types); err != nil {
				return nil, err
			}
		}
		if r.Run.RunID != rs[0].Run.RunID {
			return nil, fmt.Errorf("metrics: result %d is of run %q, result 0 of run %q: shards of one run share --run-id", i, r.Run.RunID, rs[0].Run.RunID)
		}
		for _, s := range r.Shards {
			if seen[s] {
				return nil, fmt.Errorf("metrics: shard %s given twice", s)
			}
			seen[s] = true
			out.Shards = append(out.Shards, s)
		}
		for _, e := range r.EditorsRan {
			if ran[e] {
				return nil, fmt.Errorf("metrics: editor %d ran in two shards (result %d and an earlier one): the shards overlap", e, i)
			}
			ran[e] = true
			out.EditorsRan = append(out.EditorsRan, e)
		}
		if out.Start.IsZero() || r.Start.Before(out.Start) {
			out.Start = r.Start
		}
		if r.End.After(out.End) {
			out.End = r.End
		}
		// The shards ran at once: the longest pause is the merged span's.
		out.PausedSeconds = max(out.PausedSeconds, r.PausedSeconds)
		for n, h := range r.Latency {
			if out.Latency[n] == nil {
				out.Latency[n] = NewHist()
			}
			if err := out.Latency[n].Merge(h); err != nil {
				return nil, err
			}
		}
		out.Counts.Add(r.Counts)
		out.CPUSeconds += r.CPUSeconds
		for k, v := range r.Errors {
			out.Errors[k] += v
		}
		for k, v := range r.Rejections {
			out.Rejections[k] += v
		}
		for _, iv := range r.Intervals {
			if err := mergeInterval(byUnix, iv); err != nil {
				return nil, err
			}
		}
	}
	sort.Strings(out.Shards)
	sort.Ints(out.EditorsRan)
	out.Intervals = sortedIntervals(byUnix)
	if !typed {
		out.Types = nil
	}
	return out, nil
}

// Kinds returns a count map as "k n, k n" sorted by count, for summaries.
func Kinds(m map[string]int64) string {
	type kv struct {
		k string
		v int64
	}
	var l []kv
	for k, v := range m {
		if v != 0 {
			l = append(l, kv{k, v})
		}
	}
	sort.Slice(l, func(i, j int) bool {
		if l[i].v != l[j].v {
			return l[i].v > l[j].v
		}
		return l[i].k < l[j].k
	})
	var parts []string
	for _, e := range l {
		parts = append(parts, fmt.Sprintf("%s %d", e.k, e.v))
	}
	return strings.Join(parts, ", ")
}
