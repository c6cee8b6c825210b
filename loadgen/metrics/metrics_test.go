package metrics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func lat(rng *rand.Rand) time.Duration {
	// log-uniform from 10µs to 10s, so every bucket range is used
	return time.Duration(10_000<<rng.IntN(20)) + time.Duration(rng.Int64N(int64(time.Millisecond)))
}

func TestHistJSONRoundTripIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	h := NewHist()
	for i := 0; i < 20000; i++ {
		h.Record(lat(rng))
	}
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var back Hist
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !back.Equal(h) {
		t.Fatal("decoded histogram differs from the recorded one")
	}
	if back.Quantile(99) != h.Quantile(99) || back.Max() != h.Max() {
		t.Fatal("statistics differ after the round trip")
	}
}

func TestSnapshotRefusesCorruption(t *testing.T) {
	h := NewHist()
	h.Record(time.Millisecond)
	for name, mut := range map[string]func(*Snapshot){
		"total":  func(s *Snapshot) { s.Total++ },
		"index":  func(s *Snapshot) { s.Counts[0][0] = 1 << 40 },
		"count":  func(s *Snapshot) { s.Counts[0][1] = -1; s.Total = -1 },
		"digits": func(s *Snapshot) { s.Digits = 9 },
		"unit":   func(s *Snapshot) { s.Unit = "ns" },
	} {
		s := h.Snapshot()
		mut(s)
		if _, err := s.Hist(); err == nil {
			t.Errorf("%s: a corrupt snapshot was accepted", name)
		}
	}
}

// TestMergeOfTwoFilesIsTheUnion: two results written to JSON, read back
// and merged have exactly the histograms and counts of one recorder that
// saw everything.
func TestMergeOfTwoFilesIsTheUnion(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	a, b, union := NewRecorder(), NewRecorder(), NewRecorder()
	t0 := time.Unix(1_700_000_000, 0)
	for i := 0; i < 30000; i++ {
		name := Latencies[rng.IntN(len(Latencies))]
		d := lat(rng)
		r := a
		if rng.IntN(2) == 0 {
			r = b
		}
		now := t0.Add(time.Duration(i) * 300 * time.Microsecond)
		r.Latency(name, now, d)
		union.Latency(name, now, d)
		typ := []string{"edit-text", "move-node", "delete"}[i%3]
		for _, x := range []*Recorder{r, union} {
			x.TypeCount(typ, Commands)
			x.TypeLatency(typ, Commit, d)
			if i%5 == 0 {
				x.TypeCount(typ, Rejections)
			}
		}
		if i%7 == 0 {
			r.Count(Committed, now, 1)
			union.Count(Committed, now, 1)
			r.Error("network", now)
			union.Error("network", now)
		}
	}
	dir := t.TempDir()
	var files []string
	for i, r := range []*Recorder{a, b} {
		res, err := Collect([]*Recorder{r})
		if err != nil {
			t.Fatal(err)
		}
		res.Run.RunID = "run"
		res.Shards = []string{[]string{"0/2", "1/2"}[i]}
		res.Start, res.End = t0, t0.Add(10*time.Second)
		files = append(files, filepath.Join(dir, res.Shards[0][:1]+".json"))
		if err := res.WriteFile(files[i]); err != nil {
			t.Fatal(err)
		}
	}
	var rs []*Result
	for _, f := range files {
		r, err := ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	merged, err := Merge(rs...)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Collect([]*Recorder{union})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range Latencies {
		if !merged.Hist(n).Equal(want.Hist(n)) {
			t.Errorf("%s: merged histogram is not the histogram of the union", n)
		}
		if merged.Hist(n).Count() == 0 {
			t.Errorf("%s: empty", n)
		}
	}
	if merged.Counts != want.Counts || merged.Errors["network"] != want.Errors["network"] {
		t.Errorf("counts %+v, want %+v", merged.Counts, want.Counts)
	}
	if len(merged.Intervals) != len(want.Intervals) {
		t.Fatalf("%d intervals, want %d", len(merged.Intervals), len(want.Intervals))
	}
	for i, iv := range merged.Intervals {
		w := want.Intervals[i]
		if iv.Unix != w.Unix || iv.Counts != w.Counts {
			t.Fatalf("interval %d: %+v, want %+v", i, iv, w)
		}
		for n, s := range w.Latency {
			got, _ := iv.Latency[n].Hist()
			exp, _ := s.Hist()
			if !got.Equal(exp) {
				t.Fatalf("interval %d %s differs", i, n)
			}
		}
	}
	if len(merged.Types) != 3 {
		t.Errorf("types %v", merged.TypeNames())
	}
	for n, ts := range want.Types {
		m := merged.Types[n]
		if m == nil || m.Counts != ts.Counts || !m.Commit.Equal(ts.Commit) || m.Commit.Count() == 0 {
			t.Errorf("type %s: merged %+v, want %+v", n, m, ts)
		}
	}
	if strings.Join(merged.Shards, " ") != "0/2 1/2" {
		t.Errorf("shards %v", merged.Shards)
	}
	// The same shard twice would count it twice.
	if _, err := Merge(rs[0], rs[0]); err == nil {
		t.Error("merging a shard with itself should fail")
	}
}

// TestMergeRefusesOverlappingEditors: two results that both ran one
// editor (two k6 processes with overlapping execution segments, two
// shards with the same index under other names) would count its work
// twice; a merge that covers every editor once lists them all.
func TestMergeRefusesOverlappingEditors(t *testing.T) {
	mk := func(shard string, eds ...int) *Result {
		res, _ := Collect([]*Recorder{NewRecorder()})
		res.Run.RunID, res.Run.Editors = "run", 4
		res.Shards, res.EditorsRan = []string{shard}, eds
		return res
	}
	if _, err := Merge(mk("0:1/2", 0, 1, 2), mk("1/2:1", 2, 3)); err == nil || !strings.Contains(err.Error(), "editor 2") {
		t.Errorf("overlap accepted: %v", err)
	}
	m, err := Merge(mk("1/2:1", 3, 1), mk("0:1/2", 0, 2))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(m.EditorsRan) != "[0 1 2 3]" || len(m.MissingEditors()) != 0 {
		t.Errorf("editors %v, missing %v", m.EditorsRan, m.MissingEditors())
	}
	m, _ = Merge(mk("0:1/2", 0), mk("1/2:1", 3))
	if fmt.Sprint(m.MissingEditors()) != "[1 2]" {
		t.Errorf("missing %v, want [1 2]", m.MissingEditors())
	}
}

func TestReadRefusesUnknownFields(t *testing.T) {
	res, _ := Collect([]*Recorder{NewRecorder()})
	var b bytes.Buffer
	if err := res.Write(&b); err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(b.String(), `"version":1`, `"version":1,"extra":true`, 1)
	if _, err := Read(strings.NewReader(bad)); err == nil {
		t.Error("unknown field accepted")
	}
	if _, err := Read(&b); err != nil {
		t.Error(err)
	}
}

// TestMergeKnowsWhatItCannotSay: in-flight peaks of shards add per
// second; a merge with a shard that sampled none, or that has no per-type
// breakdown (written before it existed), has neither.
func TestMergeKnowsWhatItCannotSay(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	shard := func(i int, sample bool) *Result {
		r := NewRecorder()
		if sample {
			r.InFlight(t0, int64(2+i))
			r.InFlight(t0.Add(100*time.Millisecond), int64(5+i))
		}
		r.TypeCount("edit-text", Commands)
		res, err := Collect([]*Recorder{r})
		if err != nil {
			t.Fatal(err)
		}
		res.Run.RunID, res.Shards = "run", []string{fmt.Sprintf("%d/2", i)}
		return res
	}
	m, err := Merge(shard(0, true), shard(1, true))
	if err != nil {
		t.Fatal(err)
	}
	if !m.InFlightSampled || len(m.Intervals) != 1 || m.Intervals[0].InFlight != 5+6 || m.Types["edit-text"].Counts.Commands != 2 {
		t.Errorf("merge: sampled %v, intervals %+v, types %v", m.InFlightSampled, m.Intervals, m.TypeNames())
	}
	old := shard(1, false)
	old.Types = nil
	m, err = Merge(shard(0, true), old)
	if err != nil {
		t.Fatal(err)
	}
	if m.InFlightSampled || m.Types != nil {
		t.Errorf("merge with an old shard: sampled %v, types %v", m.InFlightSampled, m.TypeNames())
	}
	// And a result file without them reads.
	var b bytes.Buffer
	if err := old.Write(&b); err != nil {
		t.Fatal(err)
	}
	if r, err := Read(&b); err != nil || r.Types != nil || r.InFlightSampled {
		t.Errorf("read: %v %+v", err, r)
	}
}

// A machine paused during the load (a virtual machine snapshotted for 31
// s, as one of this project's benchmark rounds was): the wall clock runs
// ahead of the monotonic clock by the pause, which the result records,
// leaves out of its seconds and rate, and keeps through JSON, whose times
// carry no monotonic reading.
func TestPauseIsToldAndLeftOut(t *testing.T) {
	for _, c := range []struct {
		wall, mono time.Duration
		want       float64
	}{
		{51 * time.Second, 20 * time.Second, 31},
		{21 * time.Second, 20 * time.Second, 1},
		{20*time.Second + 999*time.Millisecond, 20 * time.Second, 0}, // under PauseThreshold: slewing, not a pause
		{20 * time.Second, 20 * time.Second, 0},
		{15 * time.Second, 20 * time.Second, 0}, // the wall clock stepped back
	} {
		if got := pausedBy(c.wall, c.mono); got != c.want {
			t.Errorf("pausedBy(%v, %v) = %v, want %v", c.wall, c.mono, got, c.want)
		}
	}

	// Times of this process: no pause.
	var r Result
	start := time.Now()
	r.SetSpan(start, start.Add(20*time.Second))
	if r.PausedSeconds != 0 || r.Seconds() != 20 {
		t.Fatalf("a span of 20 s on both clocks: paused %v, seconds %v", r.PausedSeconds, r.Seconds())
	}
	// Times without a monotonic reading (parsed): none can be told.
	r.SetSpan(start.Round(0), start.Round(0).Add(51*time.Second))
	if r.PausedSeconds != 0 {
		t.Fatalf("wall-clock times only: paused %v, want 0", r.PausedSeconds)
	}

	// A paused run's result, written and read back.
	paused := Result{Version: Version, Start: start.Round(0), End: start.Round(0).Add(51 * time.Second), PausedSeconds: 31,
		Latency: map[string]*Hist{}, Counts: Counts{Committed: 40000}}
	var b bytes.Buffer
	if err := paused.Write(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"paused_seconds":31`) {
		t.Fatalf("the JSON does not carry the pause: %s", b.String())
	}
	back, err := Read(&b)
	if err != nil {
		t.Fatal(err)
	}
	if back.PausedSeconds != 31 || back.Seconds() != 20 || back.Rate() != 2000 {
		t.Fatalf("read back: paused %v, seconds %v, rate %v; want 31, 20, 2000", back.PausedSeconds, back.Seconds(), back.Rate())
	}

	// Shards run at once: a merge keeps the longest pause.
	other := paused
	other.Shards, paused.Shards = []string{"1/2"}, []string{"0/2"}
	other.PausedSeconds = 5
	other.End = other.End.Add(-26 * time.Second)
	m, err := Merge(&paused, &other)
	if err != nil {
		t.Fatal(err)
	}
	if m.PausedSeconds != 31 || m.Seconds() != 20 {
		t.Fatalf("merged: paused %v, seconds %v; want 31, 20", m.PausedSeconds, m.Seconds())
	}
}
