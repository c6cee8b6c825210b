package kbkit

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"go.k6.io/k6/lib"
	"go.k6.io/k6/metrics"

	lgmetrics "github.com/subspace/kbkit/loadgen/metrics"
	"github.com/subspace/kbkit/loadgen/plan"
	"github.com/subspace/kbkit/loadgen/workload"
)

func segState(t *testing.T, seq, seg string) *lib.State {
	t.Helper()
	sq, err := lib.NewExecutionSegmentSequenceFromString(seq)
	if err != nil {
		t.Fatal(err)
	}
	s, err := lib.NewExecutionSegmentFromString(seg)
	if err != nil {
		t.Fatal(err)
	}
	return &lib.State{Options: lib.Options{ExecutionSegment: s, ExecutionSegmentSequence: &sq}}
}

// TestPagesBySegmentLayout: with pagesBySegment every page's windows
// belong to the VUs of one segment, every process computes the same
// layout, and every editor is one VU's; segments that cannot hold whole
// pages are refused.
func TestPagesBySegmentLayout(t *testing.T) {
	spec, _ := workload.Named("many-pages")
	d := runData{Editors: 12, PagesBySegment: true}
	p := plan.New("r", spec, d.Editors)
	segs := []string{"0:1/3", "1/3:2/3", "2/3:1"}
	var first map[int]int
	for _, s := range segs {
		st := segState(t, "0,1/3,2/3,1", s)
		index, err := editorIndex(st, d, p.PerPage)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = index
		} else if fmt.Sprint(index) != fmt.Sprint(first) {
			t.Fatalf("segment %s lays the editors out as %v, another as %v", s, index, first)
		}
	}
	owner := map[int]string{} // plan editor -> segment
	for _, s := range segs {
		_, ids, err := segment(segState(t, "0,1/3,2/3,1", s), d.Editors)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			owner[first[id]] = s
		}
	}
	if len(owner) != d.Editors {
		t.Fatalf("%d of %d editors have a VU: %v", len(owner), d.Editors, first)
	}
	for i := 0; i < p.Pages; i++ {
		for k := 1; k < p.PerPage; k++ {
			if a, b := owner[p.Editor(i, 0)], owner[p.Editor(i, k)]; a != b {
				t.Errorf("page %d: windows in segments %s and %s", i, a, b)
			}
		}
	}
	// Without the option a page of two windows spans two segments (k6
	// stripes VU ids over the segments).
	plain, _ := editorIndex(segState(t, "0,1/2,1", "0:1/2"), runData{Editors: 4}, 2)
	if plain[1] != 0 || plain[2] != 1 {
		t.Errorf("default layout: %v, want editor = VU id - 1", plain)
	}
	// 3 segments of 8 editors: 3, 3 and 2 VUs, not whole pages of 2.
	_, err := editorIndex(segState(t, "0,1/3,2/3,1", "0:1/3"), runData{Editors: 8, PagesBySegment: true}, 2)
	if err == nil || !strings.Contains(err.Error(), "not whole pages") {
		t.Errorf("segments of 3, 3 and 2 editors, pages of 2: %v", err)
	}
}

// TestPagesBySegmentRun: two k6 processes (each its own module root)
// with complementary segments run many-pages with pagesBySegment against
// the reference server: each process measures fan-out to every other
// window of its pages and converges them, and their results merge with
// every editor run once.
func TestPagesBySegmentRun(t *testing.T) {
	url, token := startServer(t)
	const editors = 8
	dir := t.TempDir()
	var results []*lgmetrics.Result
	for _, s := range []string{"0:1/2", "1/2:1"} {
		root := New()
		samples := make(chan metrics.SampleContainer, 100000)
		opts := segState(t, "0,1/2,1", s).Options
		setup := newVU(t, root, samples, 0, opts)
		data := setup.run(t, fmt.Sprintf(`JSON.stringify(kbkit.setup({url: %q, token: %q, workload: 'many-pages', pages: 4, editors: %d, runId: %q, pagesBySegment: true}))`,
			url, token, editors, "pbs-"+t.Name()))
		_, ids, err := segment(&lib.State{Options: opts}, editors)
		if err != nil {
			t.Fatal(err)
		}
		// Every VU opens its windows first (a window opened later misses
		// the fan-out of the commands before).
		var vus []vu
		for _, id := range ids {
			v := newVU(t, root, samples, uint64(id), opts)
			v.run(t, fmt.Sprintf(`kbkit.editor(%s).index`, data))
			vus = append(vus, v)
		}
		for range 5 {
			for _, v := range vus {
				v.run(t, fmt.Sprintf(`kbkit.workloads.manyPages(kbkit.editor(%s)).type`, data))
			}
		}
		fin := newVU(t, root, samples, 0, opts).run(t, fmt.Sprintf(`JSON.stringify(kbkit.finish(%s, {json: %q, timeout: 20000}))`,
			data, filepath.Join(dir, "seg-{segment}.json")))
		var f struct {
			Windows, NotConverged, Diverged int
			JSON                            string
		}
		if err := json.Unmarshal([]byte(fin), &f); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "seg-"+strings.NewReplacer(":", "-", "/", "_").Replace(s)+".json")
		if f.JSON != path {
			t.Errorf("segment %s: wrote %q, want %q", s, f.JSON, path)
		}
		if f.Windows != len(ids) || f.NotConverged != 0 || f.Diverged != 0 {
			t.Errorf("segment %s: finish %s, want %d windows (one per VU, the pages whole)", s, fin, len(ids))
		}
		res, err := lgmetrics.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// Every command's echo reaches the other window of its page in
		// the same process: one fan-out sample per committed command.
		if c := res.Counts.Committed; c == 0 || res.Hist(lgmetrics.Fanout).Count() != c {
			t.Errorf("segment %s: %d committed, %d fan-out samples: a page's windows are not all here", s, c, res.Hist(lgmetrics.Fanout).Count())
		}
		results = append(results, res)
	}
	merged, err := lgmetrics.Merge(results...)
	if err != nil {
		t.Fatal(err)
	}
	if len(merged.EditorsRan) != editors || len(merged.MissingEditors()) != 0 {
		t.Errorf("merged: editors ran %v, missing %v", merged.EditorsRan, merged.MissingEditors())
	}
}
