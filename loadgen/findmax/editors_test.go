package findmax

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/subspace/kbkit/loadgen"
	lgmetrics "github.com/subspace/kbkit/loadgen/metrics"
	"github.com/subspace/kbkit/loadgen/threshold"
	"github.com/subspace/kbkit/loadgen/workload"
)

// model is a server that commits up to capacity operations a second in
// latency each, and holds the latency bound below it: each editor takes
// one operation at a time, so e editors carry e/latency a second.
type model struct {
	capacity float64
	latency  time.Duration
}

// step is what a run at rate with editors measures against m: past the
// server's capacity its latency breaks commit.p99<50ms; past what the
// editors carry, every editor is busy and the rest is dropped while the
// latency holds.
func (m model) step(_ context.Context, rate float64, stage string, editors int) (Step, error) {
	carry := float64(editors) / m.latency.Seconds()
	due := int64(rate * 5)
	st := Step{Rate: rate, Stage: stage, Due: due, Seconds: 5, CommitP99Ms: ms(m.latency), FanoutP99Ms: ms(m.latency),
		PeakInFlight: int64(min(rate, carry) * m.latency.Seconds()),
		Generator:    GeneratorCPU{Cores: 0.2, Usable: 2, WaitP99Ms: 0.1},
		Result: &lgmetrics.Result{Run: lgmetrics.RunInfo{Workload: "hot-page", Model: loadgen.Open, Commands: "http", Editors: editors,
			Pages: 1, WindowsPerPage: editors, Duration: "5s", Server: "a model"}}}
	achieved := min(rate, carry)
	if rate > m.capacity {
		achieved, st.CommitP99Ms = m.capacity, 200
	}
	st.Achieved, st.Committed = achieved, int64(achieved*5)
	if rate > carry {
		st.Dropped, st.PeakInFlight = due-st.Committed, int64(editors)
	}
	st.Checks = []lgmetrics.Check{
		{Expr: "commit.p99<50ms", Actual: fmtMs(st.CommitP99Ms), Pass: st.CommitP99Ms < 50},
		{Expr: "errors==0", Actual: "0", Pass: true},
		{Expr: "achieved>=0.9", Actual: fmt.Sprintf("%.2f", achieved/rate), Pass: achieved >= 0.9*rate},
	}
	st.Pass = true
	for _, c := range st.Checks {
		if !c.Pass && st.Broken == "" {
			st.Pass, st.Broken = false, fmt.Sprintf("%s (actual %s)", c.Expr, c.Actual)
		}
	}
	return st, nil
}

// search runs find-max against m from 200/s with 4 editors (each carries
// 100/s: 10 ms a command) and maxEditors.
func search(t *testing.T, m model, maxEditors int) *Result {
	t.Helper()
	ths, err := threshold.ParseAll([]string{"commit.p99<50ms", "errors==0"})
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := workload.Named("hot-page")
	cfg := Config{Objective: ths, runStep: m.step, Plan: Plan{StartRate: 200, MaxEditors: maxEditors},
		Run: loadgen.Config{Workload: spec, Editors: 4, Duration: 5 * time.Second}}
	res, err := Find(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := Text(&text, res); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + text.String())
	return res
}

// reruns checks that every step that ran out of editors below max is
// followed by the same rate with twice its editors (capped at max), and
// that no step has fewer editors than the one before; it returns the
// number of re-runs.
func reruns(t *testing.T, steps []Step, max int) int {
	t.Helper()
	n := 0
	for i, s := range steps {
		if i > 0 && s.Editors < steps[i-1].Editors {
			t.Errorf("step %d: %d editors after %d", i+1, s.Editors, steps[i-1].Editors)
		}
		if s.Generator.Limit != LimitEditors || s.Editors >= max {
			continue
		}
		if i+1 == len(steps) {
			t.Errorf("step %d (%g/s) ran out of %d editors and was not run again", i+1, s.Rate, s.Editors)
			continue
		}
		if nx := steps[i+1]; nx.Rate != s.Rate || nx.Editors != min(2*s.Editors, max) {
			t.Errorf("step %d (%g/s, %d editors) ran out of editors; then %g/s with %d editors", i+1, s.Rate, s.Editors, nx.Rate, nx.Editors)
		}
		n++
	}
	return n
}

// TestEditorsGrowToTheServersLimit: a step whose editors all were busy
// while the latency held runs again at its rate with twice the editors,
// until the server's capacity breaks the objective: the verdict is the
// server's, with the editors it had.
func TestEditorsGrowToTheServersLimit(t *testing.T) {
	res := search(t, model{capacity: 5000, latency: 10 * time.Millisecond}, 512)
	v := res.Verdict
	if n := reruns(t, res.Steps, 512); n < 3 {
		t.Errorf("%d re-runs with more editors, want the 4 editors (400/s) grown past 5000/s", n)
	}
	if v.LimitedBy != LimitServer || v.LowerBound || v.Next <= 5000 || v.Sustainable > 5000 || v.Sustainable < 4500 {
		t.Errorf("verdict %+v: want the server, between 4500 and 5000/s", v)
	}
	last := res.Steps[len(res.Steps)-1]
	if v.Editors != last.Editors || v.Editors < 64 || res.Run.Editors != 4 {
		t.Errorf("editors: %d at the start, %d in the verdict, %d in the last step: want 4 grown to at least 64", res.Run.Editors, v.Editors, last.Editors)
	}
	for i := len(res.Steps) - 1; i >= 0; i-- {
		if s := res.Steps[i]; s.Rate == v.Next {
			if s.Pass || s.Generator.Limit != "" || s.Editors != v.Editors {
				t.Errorf("the step at the next rate %g/s: pass %v, limit %q, %d editors", s.Rate, s.Pass, s.Generator.Limit, s.Editors)
			}
			break
		}
	}
	var text, page, js bytes.Buffer
	_ = Text(&text, res)
	if !strings.Contains(text.String(), fmt.Sprintf("editors: 4 at the start, %d at the end (--max-editors 512)", v.Editors)) ||
		!strings.Contains(Describe(res), fmt.Sprintf("4 editors, 1 page × 4 windows at first (grown to %d editors)", v.Editors)) {
		t.Errorf("the text does not say how the editors grew:\n%s", text.String())
	}
	if err := res.Write(&js); err != nil {
		t.Fatal(err)
	}
	back, err := Read(&js)
	if err != nil {
		t.Fatal(err)
	}
	if back.Verdict.Editors != v.Editors || back.Plan.MaxEditors != 512 || back.Steps[len(back.Steps)-1].Editors != last.Editors {
		t.Errorf("JSON round trip: verdict %+v, plan %+v", back.Verdict, back.Plan)
	}
	if err := HTML(&page, back); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), `id="editors"`) || !strings.Contains(page.String(), "<th>editors</th>") {
		t.Error("the page does not show the editors")
	}
}

// TestEditorsRunOutAtTheMax: editors grow no further than --max-editors;
// a step that runs out there is read as "editors", and with the editors
// fixed (0) the first such step is.
func TestEditorsRunOutAtTheMax(t *testing.T) {
	m := model{capacity: 1e9, latency: 10 * time.Millisecond}
	res := search(t, m, 16)
	v := res.Verdict
	if n := reruns(t, res.Steps, 16); n != 2 {
		t.Errorf("%d re-runs, want 2 (4 → 8 → 16)", n)
	}
	if v.LimitedBy != LimitEditors || !v.LowerBound || v.Editors != 16 || v.Sustainable < 1600 || v.Sustainable > 1600/0.9 || !strings.Contains(v.Why, "raise --max-editors") {
		t.Errorf("verdict %+v: want editors at 16 (1600/s, and achieved>=0.9 above it), raise --max-editors", v)
	}
	for _, s := range res.Steps {
		if s.Editors > 16 {
			t.Errorf("step at %g/s ran %d editors, past the max 16", s.Rate, s.Editors)
		}
	}

	res = search(t, m, 0)
	v = res.Verdict
	if n := reruns(t, res.Steps, 4); n != 0 || v.LimitedBy != LimitEditors || v.Editors != 4 || v.Sustainable < 400 || v.Sustainable > 400/0.9 ||
		!strings.Contains(v.Why, "raise --editors") {
		t.Errorf("fixed editors: %d re-runs, verdict %+v", n, v)
	}
	var text bytes.Buffer
	_ = Text(&text, res)
	if strings.Contains(text.String(), "at the start") {
		t.Errorf("fixed editors said to grow:\n%s", text.String())
	}
}

// TestMaxEditors: a max below the editors is refused; a workload whose
// pages and windows are fixed caps it at its windows.
func TestMaxEditors(t *testing.T) {
	hot, _ := workload.Named("hot-page")
	many, _ := workload.Named("many-pages")
	for _, c := range []struct {
		spec           workload.Spec
		editors, limit int
		want           int
		err            bool
	}{
		{hot, 32, 0, 32, false},
		{hot, 32, 512, 512, false},
		{hot, 32, 16, 0, true},
		{hot, 32, -1, 0, true},
		{many, 32, 512, many.Pages * many.WindowsPerPage, false},
		{many, 32, 100, 100, false},
	} {
		got, err := MaxEditors(loadgen.Config{Workload: c.spec, Editors: c.editors}, c.limit)
		if got != c.want || (err != nil) != c.err {
			t.Errorf("%s, %d editors, max %d: %d, %v; want %d (error %v)", c.spec.Name, c.editors, c.limit, got, err, c.want, c.err)
		}
	}
}
