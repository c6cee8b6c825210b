package findmax

import (
	"context"
	"errors"
	"testing"

	lgmetrics "github.com/subspace/kbkit/loadgen/metrics"
)

// capacity is a probe that passes up to cap: the search's arithmetic,
// apart from any server.
func capacity(cap float64, rates *[]float64) Probe {
	return func(_ context.Context, rate float64, _ string) (bool, int, error) {
		*rates = append(*rates, rate)
		return rate <= cap, 1, nil
	}
}

func TestSearchDoublesThenBisects(t *testing.T) {
	var rates []float64
	o, err := Search(context.Background(), Plan{StartRate: 100, Resolution: 0.1}, capacity(1000, &rates))
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{100, 200, 400, 800, 1600, 1200, 1000, 1100}
	if len(rates) != len(want) {
		t.Fatalf("rates %v, want %v", rates, want)
	}
	for i := range want {
		if rates[i] != want[i] {
			t.Fatalf("rates %v, want %v", rates, want)
		}
	}
	if o.Sustainable != 1000 || o.Next != 1100 || o.Steps != len(want) {
		t.Errorf("outcome %+v, want sustainable 1000, next 1100", o)
	}
}

func TestSearchHalvesWhenTheStartFails(t *testing.T) {
	var rates []float64
	o, err := Search(context.Background(), Plan{StartRate: 100, Resolution: 0.2}, capacity(30, &rates))
	if err != nil {
		t.Fatal(err)
	}
	if o.Sustainable != 29 || o.Next != 32 || rates[1] != 50 || rates[2] != 25 {
		t.Errorf("rates %v, outcome %+v: want halving to 25 then bisection to within 20%%", rates, o)
	}
	if o.Next > o.Sustainable*1.2 {
		t.Errorf("next %g is not within 20%% of %g", o.Next, o.Sustainable)
	}
}

func TestSearchBounds(t *testing.T) {
	var rates []float64
	o, err := Search(context.Background(), Plan{StartRate: 100, MaxRate: 300}, capacity(1e9, &rates))
	if err != nil {
		t.Fatal(err)
	}
	if o.Sustainable != 300 || o.Next != 0 || len(rates) != 3 {
		t.Errorf("rates %v, outcome %+v: want 100, 200, 300 and no failure", rates, o)
	}
	rates = nil
	o, _ = Search(context.Background(), Plan{StartRate: 100, MaxSteps: 3}, capacity(1e9, &rates))
	if len(rates) != 3 || o.Next != 0 {
		t.Errorf("max steps 3: rates %v, outcome %+v", rates, o)
	}
	rates = nil
	o, _ = Search(context.Background(), Plan{StartRate: 4}, capacity(0, &rates))
	if o.Sustainable != 0 || o.Next != 1 || rates[len(rates)-1] != 1 {
		t.Errorf("nothing passes: rates %v, outcome %+v: want halving down to the min rate 1", rates, o)
	}
	boom := errors.New("boom")
	if _, err := Search(context.Background(), Plan{StartRate: 1}, func(context.Context, float64, string) (bool, int, error) {
		return false, 1, boom
	}); !errors.Is(err, boom) {
		t.Errorf("a probe's error: %v", err)
	}
	for _, p := range []Plan{{}, {StartRate: -1}, {StartRate: 10, MaxRate: 5}, {StartRate: 1, Resolution: 1.5}, {StartRate: 1, MaxSteps: -1}, {StartRate: 1, MaxEditors: -1}} {
		if _, err := Search(context.Background(), p, capacity(1, &rates)); err == nil {
			t.Errorf("plan %+v accepted", p)
		}
	}
}

// TestLimitedBy: what ran out at a failing step is read generator first:
// a generator out of CPU, or starved of it, is never a slow server.
func TestLimitedBy(t *testing.T) {
	srv := 0.4
	base := func() Step {
		return Step{Rate: 100, Broken: "commit.p99<50ms (actual 80ms)", Dropped: 0, PeakInFlight: 3,
			Generator: GeneratorCPU{Cores: 0.5, Usable: 2, WaitP99Ms: 0.2}, ServerCores: &srv,
			Machine: &MachineCPU{Cores: 2, Busy: 1.1, Others: 0.2}}
	}
	for _, c := range []struct {
		name string
		edit func(*Step)
		want string
	}{
		{"headroom", func(*Step) {}, LimitServer},
		{"generator cores", func(s *Step) { s.Generator.Cores = 1.9 }, LimitGenerator},
		{"generator waits", func(s *Step) { s.Generator.WaitP99Ms = 12 }, LimitGenerator},
		{"machine busy", func(s *Step) { s.Machine.Busy, s.Machine.Others, s.MachineSaturated = 1.95, 1.05, true }, LimitMachine},
		{"machine busy with the server itself", func(s *Step) {
			srv2 := 1.4
			s.ServerCores, s.Machine.Busy, s.Machine.Others, s.MachineSaturated = &srv2, 1.95, 0.05, true
		}, LimitServer},
		{"embedded, all cores", func(s *Step) { s.Generator.Cores, s.Generator.WithServer = 1.95, true }, LimitShared},
		{"editors", func(s *Step) {
			s.Dropped, s.PeakInFlight = 40, 8
			s.Checks = []lgmetrics.Check{{Expr: "achieved>=0.9", Pass: false}}
		}, LimitEditors},
	} {
		s := base()
		c.edit(&s)
		s.Generator.Limit = generatorLimit(s, 8)
		if got, why := limitedBy(s, "--editors"); got != c.want || why == "" {
			t.Errorf("%s: limited by %q (%s), want %q", c.name, got, why, c.want)
		}
	}
}
