package failover

import "testing"

func TestJudgeGrowth(t *testing.T) {
	mk := func(n int, rss func(i int) int64, gor func(i int) int, fault func(i int) bool) []Sample {
		var out []Sample
		for i := range n {
			out = append(out, Sample{At: float64(i), Fault: fault(i),
				Server:    ProcSample{RSS: rss(i), Goroutines: gor(i), FDs: 20, Sockets: 10},
				Generator: ProcSample{RSS: 1 << 20, Goroutines: 50, FDs: 30, Sockets: 12}})
		}
		return out
	}
	never := func(int) bool { return false }
	flat := mk(40, func(int) int64 { return 100 << 20 }, func(int) int { return 30 }, never)
	for _, s := range judge(flat, 8) {
		if !s.OK || s.Growth != 0 {
			t.Errorf("flat %s: %+v", s.Name, s)
		}
	}
	// RSS grows 20 % over the run: fails; goroutines grow by 3: within the slack.
	growing := mk(40, func(i int) int64 { return int64(100<<20) + int64(i)*(100<<20)/160 }, func(i int) int { return 30 + i/13 }, never)
	byName := map[string]Series{}
	for _, s := range judge(growing, 8) {
		byName[s.Name] = s
	}
	if s := byName["server RSS bytes"]; s.OK || s.Growth < MaxGrowth {
		t.Errorf("a growing RSS passed: %+v", s)
	}
	if s := byName["server goroutines"]; !s.OK {
		t.Errorf("3 more goroutines failed: %+v", s)
	}
	// A spike during faults (and the warm-up) is not judged.
	spiky := mk(40, func(i int) int64 {
		if i%10 < 2 || i < 8 {
			return 400 << 20
		}
		return 100 << 20
	}, func(int) int { return 30 }, func(i int) bool { return i%10 < 2 })
	for _, s := range judge(spiky, 8) {
		if !s.OK {
			t.Errorf("spikes during faults judged: %+v", s)
		}
	}
	if judge(flat[:3], 0) != nil {
		t.Error("3 samples judged")
	}
}
