package threshold

import (
	"testing"
	"time"

	"github.com/subspace/kbkit/loadgen/metrics"
)

func result() *metrics.Result {
	rec := metrics.NewRecorder()
	now := time.Unix(1_700_000_000, 0)
	for i := 1; i <= 1000; i++ {
		rec.Latency(metrics.Commit, now, time.Duration(i)*time.Millisecond) // 1ms..1s
		rec.Latency(metrics.Fanout, now, 2*time.Millisecond)
	}
	rec.Count(metrics.Committed, now, 1000)
	rec.Count(metrics.Dropped, now, 3)
	rec.Error("network", now)
	rec.Rejection("node-not-found", now)
	rec.Rejection("node-not-found", now)
	res, _ := metrics.Collect([]*metrics.Recorder{rec})
	res.Start, res.End = now, now.Add(10*time.Second)
	return res
}

func TestParseAndEval(t *testing.T) {
	res := result()
	for _, c := range []struct {
		expr string
		pass bool
	}{
		{"commit.p99<1s", true},
		{"commit.p99 < 980ms", false},
		{"commit.p50<=501ms", true},
		{"commit.p99.9<1.1s", true},
		{"commit.p99.9<999ms", false},
		{"commit.max>=999ms", true},
		{"commit.count==1000", true},
		{"commit.p90<950", true}, // bare number: milliseconds
		{"fanout.p99<250ms", true},
		{"fanout.mean<1ms", false},
		{"echo.count==0", true},
		{"errors==0", false},
		{"errors<=1", true},
		{"errors.network==1", true},
		{"errors.timeout==0", true},
		{"rejections<10", true},
		{"rejections.node-not-found==2", true},
		{"dropped==0", false},
		{"dropped!=0", true},
		{"rate>=100", true},
		{"rate>100.5/s", false},
		{"committed>999", true},
	} {
		th, err := Parse(c.expr)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.expr, err)
			continue
		}
		ch := th.Eval(res)
		if ch.Pass != c.pass {
			t.Errorf("%s: pass = %v (actual %s), want %v", c.expr, ch.Pass, ch.Actual, c.pass)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, expr := range []string{"", "commit<1s", "commit.p101<1s", "commit.px<1s", "commit.p99<", "commit.p99<fast",
		"nonsense==0", "errors==many", "<5", "fanout.p99~1s", "rate.x>1"} {
		if _, err := Parse(expr); err == nil {
			t.Errorf("Parse(%q) should fail", expr)
		}
	}
}

func TestEvaluate(t *testing.T) {
	ts, err := ParseAll([]string{"commit.p99<1s", "errors==0"})
	if err != nil {
		t.Fatal(err)
	}
	checks, ok := Evaluate(ts, result())
	if ok || len(checks) != 2 || !checks[0].Pass || checks[1].Pass || checks[1].Actual != "1" {
		t.Errorf("Evaluate = %+v, %v", checks, ok)
	}
	if _, ok := Evaluate(nil, result()); !ok {
		t.Error("no threshold: the run passes")
	}
}

func TestAchieved(t *testing.T) {
	res := result() // 1000 committed, nothing due: not an open-model run
	th, err := Parse("achieved>=0.9")
	if err != nil {
		t.Fatal(err)
	}
	if c := th.Eval(res); c.Pass || c.Actual == "" {
		t.Errorf("nothing due: %+v, want a failed check that says why", c)
	}
	res.Counts.Due = 1100 // 1000 of 1100 committed: 0.909
	for _, c := range []struct {
		expr string
		pass bool
	}{
		{"achieved>=0.9", true}, {"achieved>=90%", true}, {"achieved>=91%", false}, {"achieved<0.95", true},
	} {
		th, err := Parse(c.expr)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.expr, err)
		}
		if ch := th.Eval(res); ch.Pass != c.pass || ch.Actual != "0.909" {
			t.Errorf("%s: %+v, want pass %v, actual 0.909", c.expr, ch, c.pass)
		}
	}
	for _, expr := range []string{"achieved>=x", "achieved>=-1", "achieved.p99>1"} {
		if _, err := Parse(expr); err == nil {
			t.Errorf("Parse(%q) should fail", expr)
		}
	}
}
