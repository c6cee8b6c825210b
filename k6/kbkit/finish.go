package kbkit

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/grafana/sobek"
	"go.k6.io/k6/lib"

	lgmetrics "github.com/subspace/kbkit/loadgen/metrics"
)

// ---- the end ----

// finish ends the load in this process, as kbkit loadgen does after its
// load: every open window waits to reach its page's head with nothing
// pending (kbkit_convergence, from the call), windows of a page at one seq
// must show the same document (else a diverged error), and all close.
// With json it writes kbkit's result (kbkit loadgen report merges the
// files of several processes). Call it in teardown(data).
func (mi *ModuleInstance) finish(data, opts sobek.Value) (map[string]any, error) {
	var o struct {
		Timeout any    `json:"timeout"`
		JSON    string `json:"json"`
	}
	if opts != nil && !sobek.IsUndefined(opts) && !sobek.IsNull(opts) {
		if err := decode("finish", opts, &o); err != nil {
			return nil, err
		}
	}
	timeout, err := jsDuration("finish", mi.vu.Runtime().ToValue(o.Timeout), 15*time.Second)
	if err != nil {
		return nil, err
	}
	var d runData
	if exportOf(data) != nil {
		if err := decode("finish", data, &d); err != nil {
			return nil, err
		}
	}
	st, err := mi.inVU("finish")
	if err != nil {
		return nil, err
	}
	defer mi.flush()
	r := mi.root
	end := time.Now()
	wins := r.windows()
	r.mu.Lock()
	started, cpu0 := r.started, r.cpu0
	r.mu.Unlock()
	cpu := cpuTime() - cpu0

	var wg sync.WaitGroup
	var notConverged sync.Map
	for _, w := range wins {
		wg.Go(func() {
			if w.ew.Converge(end, end.Add(timeout)) != nil {
				notConverged.Store(w, true)
			}
		})
	}
	wg.Wait()
	diverged := r.sess.Diverged()
	for _, w := range wins {
		w.ew.Close()
	}
	out := map[string]any{"windows": len(wins), "diverged": diverged}
	n := 0
	notConverged.Range(func(any, any) bool { n++; return true })
	out["notConverged"] = n

	res, err := lgmetrics.Collect(r.recs)
	if err != nil {
		return nil, fmt.Errorf("kbkit.finish: %w", err)
	}
	if started.IsZero() {
		started = end
	}
	res.SetSpan(started, end)
	res.CPUSeconds = cpu.Seconds()
	seg, _, _ := segment(st, max(d.Editors, 1))
	res.Shards = []string{seg}
	r.mu.Lock()
	for e := range r.ran {
		res.EditorsRan = append(res.EditorsRan, e)
	}
	r.mu.Unlock()
	sort.Ints(res.EditorsRan)
	res.Run = mi.runInfo(st, d, end.Sub(started))
	out["committed"] = res.Counts.Committed
	out["cpuSeconds"] = res.CPUSeconds
	if o.JSON != "" {
		// {segment} names each process's file apart (the runners of a
		// k6-operator TestRun share their environment).
		path := strings.ReplaceAll(o.JSON, "{segment}", strings.NewReplacer(":", "-", "/", "_").Replace(seg))
		if err := res.WriteFile(path); err != nil {
			return nil, fmt.Errorf("kbkit.finish: %w", err)
		}
		out["json"] = path
	}
	return out, nil
}

// runInfo describes the run for kbkit's result.
func (mi *ModuleInstance) runInfo(st *lib.State, d runData, span time.Duration) lgmetrics.RunInfo {
	ri := lgmetrics.RunInfo{Workload: d.Workload, Model: "closed", Editors: d.Editors, Duration: span.Round(time.Millisecond).String(),
		Server: d.URL, Seed: d.Seed, RunID: d.RunID, Generator: "k6"}
	if ri.Workload == "" {
		ri.Workload = "script"
	}
	if p, _, err := d.plan(); err == nil && d.Editors > 0 {
		ri.Pages, ri.WindowsPerPage = p.Pages, p.PerPage
	}
	var execs []string
	for _, sc := range st.Options.Scenarios.GetSortedConfigs() {
		if strings.Contains(sc.GetType(), "arrival-rate") {
			ri.Model = "open"
		}
		execs = append(execs, sc.GetName()+" "+sc.GetType())
	}
	if len(execs) > 0 {
		ri.Generator = "k6 (" + strings.Join(execs, ", ") + ")"
	}
	return ri
}
