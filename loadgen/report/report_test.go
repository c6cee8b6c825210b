package report

import (
	"bytes"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/subspace/kbkit/loadgen/metrics"
)

func sample() *metrics.Result {
	rng := rand.New(rand.NewPCG(1, 1))
	rec := metrics.NewRecorder()
	t0 := time.Unix(1_700_000_000, 0)
	for i := 0; i < 5000; i++ {
		now := t0.Add(time.Duration(i) * 2 * time.Millisecond)
		d := time.Duration(1+rng.ExpFloat64()*5) * time.Millisecond
		rec.Latency(metrics.Commit, now, d)
		rec.Latency(metrics.Echo, now, d+time.Millisecond)
		rec.Latency(metrics.Fanout, now, d+2*time.Millisecond)
		rec.Count(metrics.Committed, now, 1)
		rec.Count(metrics.Due, now, 1)
	}
	rec.Latency(metrics.Convergence, t0.Add(10*time.Second), 3*time.Millisecond)
	res, _ := metrics.Collect([]*metrics.Recorder{rec})
	res.Start, res.End = t0, t0.Add(10*time.Second)
	res.Shards = []string{"0/1"}
	res.Run = metrics.RunInfo{Workload: "hot-page", Model: "open", Rate: 500, Editors: 20, Pages: 1, WindowsPerPage: 20,
		Duration: "10s", Server: "embedded <&>", RunID: "r1"}
	res.Checks = []metrics.Check{{Expr: "fanout.p99<250ms", Actual: "20ms", Pass: true}}
	return res
}

// TestHTMLIsSelfContained: the page fetches nothing when viewed: no
// remote src or href, no script or stylesheet files.
func TestHTMLIsSelfContained(t *testing.T) {
	var b bytes.Buffer
	if err := HTML(&b, sample()); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?\s*(https?:)?//`).FindString(page); m != "" {
		t.Errorf("remote reference %q", m)
	}
	if regexp.MustCompile(`(?i)<script[^>]+src|<link[^>]+stylesheet|@import|url\(`).MatchString(page) {
		t.Error("the page loads a script or stylesheet")
	}
	for _, want := range []string{"<svg", "commit latency per second", "throughput per second", "latency by percentile",
		"fanout.p99&lt;250ms", "<polyline", "embedded &lt;&amp;&gt;"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestText(t *testing.T) {
	var b bytes.Buffer
	if err := Text(&b, sample()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"hot-page, open 500/s, 20 editors, 1 page × 20 windows", "5000 committed (500.0/s)",
		"commit", "p99.9", "fanout.p99<250ms", "ok"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

func TestDur(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0", 850 * time.Microsecond: "850µs", 1234 * time.Microsecond: "1.23ms",
		12340 * time.Microsecond: "12.3ms", 1234 * time.Millisecond: "1.23s"} {
		if got := Dur(d); got != want {
			t.Errorf("Dur(%s) = %q, want %q", d, got, want)
		}
	}
}
