package report

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/subspace/kbkit/loadgen/metrics"
)

func sample() *metrics.Result { return sampleScaled(1) }

// sampleScaled is a run whose latencies are scale times sample's.
func sampleScaled(scale float64) *metrics.Result {
	rng := rand.New(rand.NewPCG(1, 1))
	rec := metrics.NewRecorder()
	t0 := time.Unix(1_700_000_000, 0)
	for i := 0; i < 5000; i++ {
		now := t0.Add(300*time.Millisecond + time.Duration(i)*2*time.Millisecond)
		d := time.Duration((1 + rng.ExpFloat64()*5) * scale * float64(time.Millisecond))
		typ := []string{"edit-text", "create-after"}[i%2]
		rec.TypeCount(typ, metrics.Commands)
		rec.TypeCount(typ, metrics.Committed)
		rec.TypeLatency(typ, metrics.Commit, d)
		rec.TypeLatency(typ, metrics.Echo, d+time.Millisecond)
		rec.InFlight(now, int64(i%7))
		if i%1000 == 999 {
			rec.Count(metrics.Retries, now, 1)
		}
		rec.Latency(metrics.Commit, now, d)
		rec.Latency(metrics.Echo, now, d+time.Millisecond)
		rec.Latency(metrics.Fanout, now, d+2*time.Millisecond)
		rec.Count(metrics.Committed, now, 1)
		rec.Count(metrics.Due, now, 1)
	}
	rec.Latency(metrics.Convergence, t0.Add(10*time.Second), 3*time.Millisecond)
	res, _ := metrics.Collect([]*metrics.Recorder{rec})
	res.Start, res.End = t0.Add(300*time.Millisecond), t0.Add(10300*time.Millisecond)
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
		"fanout.p99&lt;250ms", "<polyline", "embedded &lt;&amp;&gt;",
		"errors and recovery per second", "retries/s", "reconnects/s", "refetches/s", "operations in flight (peak per second)",
		"<td>edit-text</td><td>2500</td><td>2500</td>", // the per-type table
		`class="band partial"`,                         // the partial first second
		`class="hov" data-tip="`, "<title>",            // hover values
	} {
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

// A run during which the machine stood still says so, in its summary and
// in a comparison; one that did not says nothing of it.
func TestPauseIsSaid(t *testing.T) {
	r := sample()
	var b bytes.Buffer
	if err := Text(&b, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "PAUSED") {
		t.Fatalf("a run without a pause is said to have one:\n%s", b.String())
	}
	paused := sample()
	paused.End = paused.End.Add(31 * time.Second)
	paused.PausedSeconds = 31
	b.Reset()
	if err := Text(&b, paused); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "PAUSED: the machine stood still for 31.0s") || !strings.Contains(b.String(), fmt.Sprintf("load %.1fs:", r.Seconds())) {
		t.Fatalf("the summary of a paused run:\n%s", b.String())
	}
	b.Reset()
	if err := HTML(&b, paused); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "PAUSED: the machine stood still for 31.0 s") {
		t.Fatal("the HTML report of a paused run does not say so")
	}
	b.Reset()
	if err := CompareText(&b, "a.json", r, "b.json", paused); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "stood still for 31.0s during run B") || strings.Contains(b.String(), "during run A") {
		t.Fatalf("the comparison:\n%s", b.String())
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

// TestHTMLSaysNA: what a result cannot say is "n/a", not zero: a latency
// with no sample (fan-out across shards), in-flight work not sampled, no
// per-type breakdown (results written before it, or a merge with one).
func TestHTMLSaysNA(t *testing.T) {
	r := sample()
	r.Latency[metrics.Fanout] = metrics.NewHist()
	r.InFlightSampled = false
	r.Types = nil
	var b bytes.Buffer
	if err := HTML(&b, r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{`<tr><td>fanout</td><td>0</td><td class="na">n/a</td>`, `peak in flight</td><td class="na">n/a</td>`,
		"n/a: in-flight work was not sampled", "n/a: this result (or a shard merged into it) has no per-type breakdown"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "operations in flight (peak per second)") {
		t.Error("an in-flight chart of nothing")
	}
}

// TestPartialSecondsAreRates: the partial first and last seconds (0.7 s
// and 0.3 s of load) are drawn at the rate of the rest, not as dips.
func TestPartialSecondsAreRates(t *testing.T) {
	r := sample()
	ss := rates(r, []string{"committed/s"}, []string{"#000"}, func(iv metrics.Interval) []int64 { return []int64{iv.Counts.Committed} })
	pts := ss[0].pts
	if len(pts) < 3 {
		t.Fatalf("points %v", pts)
	}
	first, mid, last := pts[0][1], pts[1][1], pts[len(pts)-1][1]
	if first < 0.9*mid || first > 1.1*mid || last < 0.9*mid || last > 1.1*mid {
		t.Errorf("first and last (partial) seconds at %.0f/s and %.0f/s, the second at %.0f/s", first, last, mid)
	}
	bands := timeBands(r)
	if len(bands) == 0 || bands[0].class != "partial" || bands[0].x0 != 0 {
		t.Errorf("bands %+v", bands)
	}
}
