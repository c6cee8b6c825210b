package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/subspace/kbkit/loadgen/metrics"
)

func row(t *testing.T, rows []CompareRow, name string) CompareRow {
	t.Helper()
	for _, r := range rows {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no row %q", name)
	return CompareRow{}
}

// TestCompareMarksTheBetterRun: B's latencies are twice A's, so A is
// better on every latency; counts with no better direction get no mark;
// a run compared with itself is equal everywhere; a latency one run did
// not measure is n/a, not a win.
func TestCompareMarksTheBetterRun(t *testing.T) {
	a, b := sampleScaled(1), sampleScaled(2)
	b.Counts.Errors = 3
	rows := Compare(a, b)
	for _, name := range []string{"commit p50", "commit p99", "echo p99.9", "fanout max", "edit-text commit p99", "errors"} {
		if r := row(t, rows, name); r.Better != "A" {
			t.Errorf("%s: %+v, want A better", name, r)
		}
	}
	if r := row(t, rows, "commit p50"); !strings.HasPrefix(r.Delta, "+") || !strings.Contains(r.Delta, "%)") {
		t.Errorf("commit p50 delta %q", r.Delta)
	}
	if r := row(t, rows, "committed"); r.Better != "" || r.Delta != "+0 (+0.0%)" {
		t.Errorf("committed: %+v", r)
	}
	for _, r := range Compare(a, a) {
		if r.Better != "" && r.Better != "=" {
			t.Errorf("a run against itself: %+v", r)
		}
	}
	b.Latency[metrics.Fanout] = metrics.NewHist()
	if r := row(t, Compare(a, b), "fanout p99"); r.B != "n/a" || r.Better != "" || r.Delta != "" {
		t.Errorf("fanout p99 without samples: %+v", r)
	}
	// Higher is better for the rate.
	b.End = b.End.Add(b.End.Sub(b.Start)) // the same commands in twice the time
	if r := row(t, Compare(a, b), "rate (committed/s)"); r.Better != "A" {
		t.Errorf("rate: %+v", r)
	}
}

func TestCompareOutputs(t *testing.T) {
	a, b := sampleScaled(1), sampleScaled(2)
	var txt bytes.Buffer
	if err := CompareText(&txt, "a.json", a, "b.json", b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"A: a.json: hot-page", "B: b.json", "commit p99", "better: A on "} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, txt.String())
		}
	}
	var h bytes.Buffer
	if err := CompareHTML(&h, "a.json", a, "b.json", b); err != nil {
		t.Fatal(err)
	}
	page := h.String()
	if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?\s*(https?:)?//`).FindString(page); m != "" {
		t.Errorf("remote reference %q", m)
	}
	for _, want := range []string{`<table id="compare">`, `<tr data-better="A"><td>commit p99</td><td class="better">`,
		"commit latency by percentile (A solid, B dashed)", "committed per second", "A committed/s", "B committed/s",
		`stroke-dasharray="5 3"`, `class="hov" data-tip=`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}
