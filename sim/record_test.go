package sim

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/subspace/kbkit/sim/broken"

	"github.com/subspace/kbkit/sim/timeline"
)

type timelineData struct {
	Lanes    []timeline.Lane    `json:"lanes"`
	Events   []timeline.Event   `json:"events"`
	Findings []timeline.Finding `json:"findings"`
}

func readTimeline(t *testing.T, path string) timelineData {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)<script id="tl-data" type="application/json">(.*?)</script>`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s has no timeline data", path)
	}
	var d timelineData
	if err := json.Unmarshal(m[1], &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestTimelineShowsTheBug runs a seed against a server that logs some
// commands twice (variant(t, "double-echo")): the seed's timeline has a lane per
// window, instance and page log, and the exactly-once finding about a
// doubled command lights up that command's POST (one seq acknowledged)
// and its two log entries (two seqs): the bug, in the events. A passing
// seed writes no page unless every seed is asked for, and then one with
// no finding.
func TestTimelineShowsTheBug(t *testing.T) {
	e := embedded(t, EmbeddedOptions{})
	dir := t.TempDir()
	p := broken.NewProxy(e, variant(t, "double-echo")())
	defer p.Close()
	opts := Options{Steps: 60, EchoTimeout: time.Second, HTMLDir: dir, OutDir: dir}
	r := RunSeed(context.Background(), p, opts, 1)
	if r.Err != "" || !r.Failed() || r.Timeline == "" {
		t.Fatalf("seed 1: err %q, failed %v, timeline %q", r.Err, r.Failed(), r.Timeline)
	}
	d := readTimeline(t, r.Timeline)
	lanes := map[string]int{}
	for _, l := range d.Lanes {
		lanes[l.Kind]++
	}
	if lanes[timeline.LaneWindow] != 4 || lanes[timeline.LaneInstance] != 2 || lanes[timeline.LaneLog] != 3 {
		t.Errorf("lanes by kind: %v", lanes)
	}
	// "command X (...) was acknowledged with seq N, but the log holds Y
	// there": X's POST answered seq N, and the log's entry at N is Y.
	ackRe := regexp.MustCompile(`command (\S+) \(.*\) was acknowledged with seq (\d+), but the log holds "(\S+)" there`)
	// "command X appears 2 times in the logs": two log entries of X.
	twiceRe := regexp.MustCompile(`command (\S+) appears \d+ times in the logs`)
	acked, twice := 0, 0
	for _, f := range d.Findings {
		if f.Checker != CheckExactlyOnce {
			continue
		}
		var post, entry bool
		logSeqs := map[int64]bool{}
		if m := ackRe.FindStringSubmatch(f.Text); m != nil {
			for _, id := range f.Events {
				ev := d.Events[id]
				post = post || (ev.Kind == timeline.KindPost && ev.Cmd == m[1] && strings.HasPrefix(ev.Status, "seq "+m[2]))
				entry = entry || (ev.Kind == timeline.KindLog && ev.Cmd == m[3] && strconv.FormatInt(ev.Seq, 10) == m[2])
			}
			t.Logf("%s: %d events, its POST %v, the log entry %v", f.Text, len(f.Events), post, entry)
			if post && entry {
				acked++
			}
		}
		if m := twiceRe.FindStringSubmatch(f.Text); m != nil {
			for _, id := range f.Events {
				if ev := d.Events[id]; ev.Kind == timeline.KindLog && ev.Cmd == m[1] {
					logSeqs[ev.Seq] = true
				}
			}
			t.Logf("%s: %d events, log entries at seqs %v", f.Text, len(f.Events), logSeqs)
			if len(logSeqs) >= 2 {
				twice++
			}
		}
	}
	if acked == 0 || twice == 0 {
		t.Errorf("exactly-once findings linked to the events that show the bug: %d acknowledged-at findings, %d doubled-command findings: %+v", acked, twice, d.Findings)
	}

	// A passing seed: no page, unless HTMLAll.
	opts = Options{Steps: 30, HTMLDir: t.TempDir()}
	if r := RunSeed(context.Background(), e, opts, 2); r.Failed() || r.Timeline != "" {
		t.Errorf("passing seed: failed %v, timeline %q", r.Failed(), r.Timeline)
	}
	opts.HTMLAll = true
	r = RunSeed(context.Background(), e, opts, 2)
	if r.Failed() || r.Timeline == "" {
		t.Fatalf("passing seed with HTMLAll: failed %v, timeline %q", r.Failed(), r.Timeline)
	}
	d = readTimeline(t, r.Timeline)
	kinds := map[string]int{}
	for _, ev := range d.Events {
		kinds[ev.Kind]++
	}
	if len(d.Findings) != 0 || kinds[timeline.KindCommand] == 0 || kinds[timeline.KindEcho] == 0 || kinds[timeline.KindLog] == 0 {
		t.Errorf("passing seed: %d findings, events by kind %v", len(d.Findings), kinds)
	}
}
