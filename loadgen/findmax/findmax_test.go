package findmax

import (
	"bytes"
	"context"
	"os"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subspace/kbkit/loadgen"
	"github.com/subspace/kbkit/loadgen/threshold"
	"github.com/subspace/kbkit/loadgen/workload"
	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/target"
)

func TestMain(m *testing.M) { os.Exit(pgprovider.RunTests(m)) }

func embedded(t *testing.T) *target.Embedded {
	t.Helper()
	e, err := target.NewEmbedded(context.Background(), pgprovider.ForTest(t), target.EmbeddedOptions{Instances: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// config is a search of short steps on a hot page of four editors.
func config(t *testing.T, e target.Target, objective ...string) Config {
	t.Helper()
	ths, err := threshold.ParseAll(objective)
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := workload.Named("hot-page")
	return Config{Target: e, Embedded: true, Objective: ths,
		Run: loadgen.Config{Workload: spec, Editors: 4, Duration: time.Second, Drain: 10 * time.Second, Seed: 1}}
}

var limits = map[string]bool{LimitServer: true, LimitGenerator: true, LimitMachine: true, LimitShared: true, LimitEditors: true}

// TestFindMaxAgainstEmbedded: a search against the reference server
// (real PostgreSQL, real sockets) with an objective the steps break as
// their rate grows ends on a passing rate whose next step broke it; every
// step says the generator's CPU, its wait for a CPU and the machine's.
func TestFindMaxAgainstEmbedded(t *testing.T) {
	cfg := config(t, embedded(t), "committed<=24", "errors==0")
	cfg.Plan = Plan{StartRate: 8, Resolution: 0.25, MaxSteps: 8}
	var seen int
	cfg.OnStep = func(Step) { seen++ }
	res, err := Find(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := Text(&text, res); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + text.String())
	if seen != len(res.Steps) || res.Steps[0].Rate != 8 || res.Steps[0].Stage != StageDouble {
		t.Errorf("%d steps reported of %d; first %+v", seen, len(res.Steps), res.Steps[0])
	}
	if got := strings.Join(res.Objective, ", "); got != "committed<=24, errors==0, achieved>=0.9" {
		t.Errorf("objective %q: the default achieved threshold joins it", got)
	}
	v := res.Verdict
	if v.Next == 0 {
		t.Fatalf("no step broke committed<=24 in %d steps", len(res.Steps))
	}
	var sust, next *Step
	for i := range res.Steps {
		s := &res.Steps[i]
		switch {
		case s.Rate == v.Sustainable && s.Pass:
			sust = s
		case s.Rate == v.Next && !s.Pass:
			next = s
		}
		if s.Due == 0 || s.Committed == 0 || s.Result == nil {
			t.Errorf("step %g/s: due %d, committed %d: no load", s.Rate, s.Due, s.Committed)
		}
		if s.Generator.Cores <= 0 || s.Generator.Usable < 1 || s.Generator.WaitP99Ms < 0 || !s.Generator.WithServer {
			t.Errorf("step %g/s: generator %+v", s.Rate, s.Generator)
		}
		if runtime.GOOS == "linux" && (s.Machine == nil || s.Machine.Cores < 1 || s.Machine.Busy <= 0) {
			t.Errorf("step %g/s: machine %+v", s.Rate, s.Machine)
		}
		if s.Pass != (s.Broken == "") {
			t.Errorf("step %g/s: pass %v, broken %q", s.Rate, s.Pass, s.Broken)
		}
	}
	if v.Sustainable > 0 && (sust == nil || v.Sustainable >= v.Next) {
		t.Errorf("verdict %+v: the sustainable rate is not a passing step below the next", v)
	}
	if next == nil || !strings.HasPrefix(v.Broken, "committed<=24") && !strings.HasPrefix(v.Broken, "achieved") && !strings.HasPrefix(v.Broken, "errors") {
		t.Errorf("verdict %+v: the next step did not break the objective", v)
	}
	if !limits[v.LimitedBy] || v.Why == "" || v.LowerBound != (v.LimitedBy != LimitServer && v.Sustainable > 0) {
		t.Errorf("verdict %+v", v)
	}
	if !strings.Contains(text.String(), "sustainable:") || !strings.Contains(text.String(), "limited by") {
		t.Errorf("text report without the verdict:\n%s", text.String())
	}

	var js bytes.Buffer
	if err := res.Write(&js); err != nil {
		t.Fatal(err)
	}
	back, err := Read(&js)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Verdict, res.Verdict) || len(back.Steps) != len(res.Steps) || back.Steps[0].Generator != res.Steps[0].Generator {
		t.Errorf("JSON round trip: %+v, want %+v", back.Verdict, res.Verdict)
	}
	var page bytes.Buffer
	if err := HTML(&page, back); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`id="headline"`, `id="steps"`, "<svg", "Achieved against target"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page has no %s", want)
		}
	}
}

// hog keeps 4 × GOMAXPROCS goroutines of this process spinning until the
// returned function is called: the generator's goroutines then wait
// behind them for a CPU, as on a machine whose cores are taken.
func hog() func() {
	stop := make(chan struct{})
	for range 4 * runtime.GOMAXPROCS(0) {
		go func() {
			x := 0
			for {
				select {
				case <-stop:
					return
				default:
					for i := 0; i < 1e5; i++ {
						x += i
					}
				}
			}
		}()
	}
	return func() { close(stop) }
}

// TestStarvedGeneratorIsNotASlowServer: a step that breaks its objective
// while the generator's process is starved of CPU is read as the
// generator (or the machine) running out, never the server, and what the
// server alone sustains as not known.
func TestStarvedGeneratorIsNotASlowServer(t *testing.T) {
	cfg := config(t, embedded(t), "committed<1") // every step that commits breaks it
	cfg.Plan = Plan{StartRate: 20, MaxSteps: 1}
	stopHog := sync.OnceFunc(hog())
	defer stopHog()
	res, err := Find(context.Background(), cfg)
	stopHog()
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	_ = Text(&text, res)
	t.Log("\n" + text.String())
	s := res.Steps[0]
	if s.Pass || s.Generator.Limit == "" {
		t.Fatalf("the starved step: pass %v, generator %+v", s.Pass, s.Generator)
	}
	v := res.Verdict
	if v.LimitedBy == LimitServer || v.LimitedBy == "" || !strings.Contains(v.Why, "not known") || v.GeneratorRanOut != 20 {
		t.Errorf("verdict %+v: a starved generator read as %q", v, v.LimitedBy)
	}
}
