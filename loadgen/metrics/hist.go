package metrics

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram geometry: microseconds from 1µs to one hour. Run histograms keep
// 3 significant digits; the per-second interval histograms, of which a run
// has many, keep 2.
const (
	Lowest      = 1
	Highest     = int64(time.Hour / time.Microsecond)
	Digits      = 3
	IntervalDig = 2
)

// Hist is an HDR histogram of latencies in microseconds. Its JSON form is
// hdrhistogram's Export snapshot with only the non-zero counts, so that a
// decoded histogram is the recorded one exactly and shards merge exactly.
type Hist struct {
	h *hdrhistogram.Histogram
}

// NewHist returns an empty run histogram (3 significant digits).
func NewHist() *Hist { return &Hist{h: hdrhistogram.New(Lowest, Highest, Digits)} }

// NewIntervalHist returns an empty per-second histogram (2 significant digits).
func NewIntervalHist() *Hist { return &Hist{h: hdrhistogram.New(Lowest, Highest, IntervalDig)} }

// Record adds one latency; values outside the range are clamped to it.
func (h *Hist) Record(d time.Duration) {
	v := d.Microseconds()
	v = min(max(v, Lowest), Highest)
	_ = h.h.RecordValue(v) // in range: cannot fail
}

// RecordMicros adds one latency in microseconds (clamped).
func (h *Hist) RecordMicros(v int64) {
	v = min(max(v, Lowest), Highest)
	_ = h.h.RecordValue(v)
}

// Merge adds o's counts. Histograms of the same geometry merge exactly; an
// error means some counts could not be represented (never for histograms
// made by this package).
func (h *Hist) Merge(o *Hist) error {
	if o == nil {
		return nil
	}
	if dropped := h.h.Merge(o.h); dropped > 0 {
		return fmt.Errorf("metrics: %d values out of range in merge", dropped)
	}
	return nil
}

// Clone returns an independent copy.
func (h *Hist) Clone() *Hist { return &Hist{h: h.h.Clone()} }

// Count is the number of recorded values.
func (h *Hist) Count() int64 { return h.h.TotalCount() }

// Quantile is the latency at percentile p (0-100).
func (h *Hist) Quantile(p float64) time.Duration {
	if h.Count() == 0 {
		return 0
	}
	return time.Duration(h.h.ValueAtPercentile(p)) * time.Microsecond
}

// Max is the largest recorded latency (to the histogram's precision).
func (h *Hist) Max() time.Duration {
	if h.Count() == 0 {
		return 0
	}
	return time.Duration(h.h.Max()) * time.Microsecond
}

// Min is the smallest recorded latency.
func (h *Hist) Min() time.Duration {
	if h.Count() == 0 {
		return 0
	}
	return time.Duration(h.h.Min()) * time.Microsecond
}

// Mean is the mean latency.
func (h *Hist) Mean() time.Duration {
	return time.Duration(h.h.Mean() * float64(time.Microsecond))
}

// Equal reports whether two histograms have the same geometry and counts.
func (h *Hist) Equal(o *Hist) bool { return h.h.Equals(o.h) }

// Bracket is one step of the cumulative distribution: Fraction of the
// values are at most Value.
type Bracket struct {
	Value    time.Duration
	Fraction float64
}

// Spectrum is the percentile spectrum HdrHistogram plots: latency at
// percentiles 0, 50, 75, 87.5, ... up to the maximum, ticks per half.
func (h *Hist) Spectrum(ticksPerHalf int) []Bracket {
	if h.Count() == 0 {
		return nil
	}
	var out []Bracket
	for i := 0; ; i++ {
		// 1 - 1/2^(i/ticks): evenly spaced on the "number of nines" axis.
		f := 1 - math.Pow(2, -float64(i)/float64(ticksPerHalf))
		if f >= 1-1/float64(h.Count()) || i > 40*ticksPerHalf {
			break
		}
		out = append(out, Bracket{Value: h.Quantile(100 * f), Fraction: f})
	}
	out = append(out, Bracket{Value: h.Max(), Fraction: 1})
	return out
}

// Snapshot is a histogram's JSON form: hdrhistogram's Export with the
// non-zero counts as [index, count] pairs.
type Snapshot struct {
	Unit    string     `json:"unit"`
	Lowest  int64      `json:"lowest"`
	Highest int64      `json:"highest"`
	Digits  int64      `json:"digits"`
	Total   int64      `json:"total"`
	Counts  [][2]int64 `json:"counts"`
}

// Snapshot exports the histogram.
func (h *Hist) Snapshot() *Snapshot {
	s := h.h.Export()
	out := &Snapshot{Unit: "us", Lowest: s.LowestTrackableValue, Highest: s.HighestTrackableValue,
		Digits: s.SignificantFigures, Total: h.Count(), Counts: [][2]int64{}}
	for i, c := range s.Counts {
		if c != 0 {
			out.Counts = append(out.Counts, [2]int64{int64(i), c})
		}
	}
	return out
}

// Hist imports the snapshot, checking it first (a file may be corrupt).
func (s *Snapshot) Hist() (*Hist, error) {
	if s == nil {
		return NewHist(), nil
	}
	if s.Unit != "" && s.Unit != "us" {
		return nil, fmt.Errorf("metrics: histogram unit %q, want us", s.Unit)
	}
	probe := hdrhistogram.Snapshot{LowestTrackableValue: s.Lowest, HighestTrackableValue: s.Highest, SignificantFigures: s.Digits}
	if err := probe.Validate(); err != nil {
		return nil, fmt.Errorf("metrics: histogram: %w", err)
	}
	size := hdrhistogram.Import(&probe).Export().Counts // the geometry's length
	counts := make([]int64, len(size))
	var total int64
	for _, p := range s.Counts {
		if p[0] < 0 || p[0] >= int64(len(counts)) {
			return nil, fmt.Errorf("metrics: histogram index %d outside 0..%d", p[0], len(counts)-1)
		}
		if p[1] < 0 {
			return nil, errors.New("metrics: negative histogram count")
		}
		counts[p[0]] += p[1]
		total += p[1]
	}
	if total != s.Total {
		return nil, fmt.Errorf("metrics: histogram counts sum to %d, total says %d", total, s.Total)
	}
	full := &hdrhistogram.Snapshot{LowestTrackableValue: s.Lowest, HighestTrackableValue: s.Highest,
		SignificantFigures: s.Digits, Counts: counts}
	if err := full.Validate(); err != nil {
		return nil, fmt.Errorf("metrics: histogram: %w", err)
	}
	return &Hist{h: hdrhistogram.Import(full)}, nil
}

// MarshalJSON writes the snapshot.
func (h *Hist) MarshalJSON() ([]byte, error) { return json.Marshal(h.Snapshot()) }

// UnmarshalJSON reads a snapshot.
func (h *Hist) UnmarshalJSON(b []byte) error {
	var s Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	x, err := s.Hist()
	if err != nil {
		return err
	}
	*h = *x
	return nil
}
