package kbkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/grafana/sobek"
	"go.k6.io/k6/lib"
	k6metrics "go.k6.io/k6/metrics"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/loadgen/editor"
	"github.com/subspace/kbkit/loadgen/plan"
	"github.com/subspace/kbkit/loadgen/workload"
	"github.com/subspace/kbkit/server/store"
)

// decode reads a JS object into v, refusing unknown keys, so that a
// misspelt option is an error rather than a silent default.
func decode(fn string, obj sobek.Value, v any) error {
	if obj == nil || sobek.IsUndefined(obj) || sobek.IsNull(obj) {
		return fmt.Errorf("kbkit.%s: missing its options object", fn)
	}
	b, err := json.Marshal(obj.Export())
	if err != nil {
		return fmt.Errorf("kbkit.%s: options: %w", fn, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("kbkit.%s: options: %w", fn, err)
	}
	return nil
}

// inVU is the VU's state, or an error naming fn when called in the init
// context (k6 allows no network there).
func (mi *ModuleInstance) inVU(fn string) (*lib.State, error) {
	st := mi.vu.State()
	if st == nil {
		return nil, fmt.Errorf("kbkit.%s: call it in setup() or a VU function, not in the init context", fn)
	}
	return st, nil
}

type server struct {
	URL   string `json:"url"`
	Token string `json:"token"`
}

func (s server) check(fn string) error {
	switch {
	case s.URL == "":
		return fmt.Errorf("kbkit.%s: url is required (the url of kbkit serve's JSON line; the examples read KBKIT_URL)", fn)
	case !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://"):
		return fmt.Errorf("kbkit.%s: url %q: want http://HOST:PORT", fn, s.URL)
	case s.Token == "":
		return fmt.Errorf("kbkit.%s: token is required (a device token, kbk_...; the examples read KBKIT_TOKEN)", fn)
	}
	return nil
}

// ---- windows and pages ----

// openWindow opens a page in this VU: {url, token, page}.
func (mi *ModuleInstance) openWindow(opts sobek.Value) (*Window, error) {
	var o struct {
		server
		Page string `json:"page"`
	}
	if err := decode("openWindow", opts, &o); err != nil {
		return nil, err
	}
	if err := o.check("openWindow"); err != nil {
		return nil, err
	}
	if o.Page == "" {
		return nil, errors.New("kbkit.openWindow: page is required (a page id, e.g. from kbkit.createPage)")
	}
	if _, err := mi.inVU("openWindow"); err != nil {
		return nil, err
	}
	return mi.open(o.URL, o.Token, o.Page, 0, -1)
}

// open opens a window on pageID for editor ed (-1: a script's window).
func (mi *ModuleInstance) open(url, token, pageID string, wait time.Duration, ed int) (*Window, error) {
	defer mi.flush()
	st := mi.vu.State()
	ctx := mi.vu.Context()
	dev, err := mi.root.deviceID(ctx, url, token)
	if err != nil {
		return nil, fmt.Errorf("kbkit: %w", err)
	}
	r := mi.root
	r.mu.Lock()
	n := r.opened
	r.opened++
	r.mu.Unlock()
	w := &Window{root: r, mi: mi, base: st.Tags.GetCurrentValues().Tags,
		rng: rand.New(rand.NewPCG(st.VUIDGlobal, uint64(n)))}
	ew, err := r.sess.Open(ctx, client.New(url, token), pageID, editor.Options{DeviceID: dev, WaitForPage: wait,
		Recorder: mi.rec, Tap: w.tap, Workload: "script", Data: w})
	if err != nil {
		return nil, fmt.Errorf("kbkit: %w", err)
	}
	w.ew = ew
	if ed >= 0 {
		r.mu.Lock()
		r.ran[ed] = true
		r.mu.Unlock()
	}
	// Counters start at zero, so that the summary lists them and
	// thresholds such as count==0 have a sample to judge.
	now := time.Now()
	tags := w.base.With("workload", "script")
	for _, m := range []*k6metrics.Metric{mi.m.rejections, mi.m.refetches, mi.m.reconnects, mi.m.failures} {
		r.count(m, tags, now, 0)
	}
	return w, nil
}

// windows are the process's open windows, in the order they opened.
func (r *RootModule) windows() []*Window {
	var out []*Window
	for _, ew := range r.sess.Windows() {
		if w, ok := ew.Data().(*Window); ok {
			out = append(out, w)
		}
	}
	return out
}

// createPage creates a page with seed nodes s0, s1, ...: {url, token,
// nodes}; it returns {id, title, nodes}.
func (mi *ModuleInstance) createPage(opts sobek.Value) (map[string]any, error) {
	var o struct {
		server
		Nodes *int `json:"nodes"`
	}
	if err := decode("createPage", opts, &o); err != nil {
		return nil, err
	}
	if err := o.check("createPage"); err != nil {
		return nil, err
	}
	if _, err := mi.inVU("createPage"); err != nil {
		return nil, err
	}
	n := 5
	if o.Nodes != nil {
		n = *o.Nodes
	}
	if n < 0 || n > 10000 {
		return nil, fmt.Errorf("kbkit.createPage: nodes %d: want 0 to 10000", n)
	}
	ctx := mi.vu.Context()
	dev, err := mi.root.deviceID(ctx, o.URL, o.Token)
	if err != nil {
		return nil, fmt.Errorf("kbkit.createPage: %w", err)
	}
	p := plan.Plan{RunID: uuid.NewString(), Editors: 1, Pages: 1, PerPage: 1, Nodes: n}
	if err := p.CreatePage(ctx, client.New(o.URL, o.Token), dev, 0); err != nil {
		return nil, fmt.Errorf("kbkit.createPage: %w", err)
	}
	mi.root.sess.SetTitle(p.PageID(0), p.Title(0))
	nodes := make([]string, n)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("s%d", i)
	}
	return map[string]any{"id": p.PageID(0), "title": p.Title(0), "nodes": nodes}, nil
}

// pair pairs count new devices of workspace in the server's database:
// {dsn, workspace, count}; it returns their tokens.
func (mi *ModuleInstance) pair(opts sobek.Value) ([]string, error) {
	var o struct {
		DSN       string `json:"dsn"`
		Workspace string `json:"workspace"`
		Count     int    `json:"count"`
	}
	if err := decode("pair", opts, &o); err != nil {
		return nil, err
	}
	if o.DSN == "" {
		return nil, errors.New("kbkit.pair: dsn is required (the dsn of kbkit serve's JSON line)")
	}
	if o.Count < 1 || o.Count > 10000 {
		return nil, fmt.Errorf("kbkit.pair: count %d: want 1 to 10000", o.Count)
	}
	if o.Workspace == "" {
		o.Workspace = "dev" // kbkit serve's
	}
	if _, err := mi.inVU("pair"); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(mi.vu.Context(), time.Minute)
	defer cancel()
	st, err := store.Open(ctx, o.DSN)
	if err != nil {
		return nil, fmt.Errorf("kbkit.pair: %w", err)
	}
	defer st.Close()
	var out []string
	for range o.Count {
		d, err := st.PairDevice(ctx, o.Workspace)
		if err != nil {
			return nil, fmt.Errorf("kbkit.pair: %w", err)
		}
		out = append(out, d.Token)
	}
	return out, nil
}

// ---- the editors of a run ----

// runData is what kbkit.setup returns and kbkit.editor and kbkit.finish
// read: the run's layout, the same in every process of the run.
type runData struct {
	URL            string   `json:"url"`
	Token          string   `json:"token"`
	Tokens         []string `json:"tokens,omitempty"`
	Workload       string   `json:"workload"`
	Mix            string   `json:"mix,omitempty"`
	Pages          int      `json:"pages,omitempty"`
	WindowsPerPage int      `json:"windowsPerPage,omitempty"`
	Nodes          int      `json:"nodes,omitempty"`
	Burst          int      `json:"burst,omitempty"`
	Editors        int      `json:"editors,omitempty"`
	RunID          string   `json:"runId,omitempty"`
	Seed           int64    `json:"seed,omitempty"`
	// PagesBySegment lays the editors out segment by segment, so that
	// every page's windows belong to the VUs of one execution segment
	// (one k6 process, one k6-operator runner): fan-out is measured to
	// every window of a page, and each process checks its pages'
	// convergence whole. Each segment's editors must fill whole pages.
	PagesBySegment bool `json:"pagesBySegment,omitempty"`
	// Set by setup.
	Segment string `json:"segment,omitempty"`
	// Setup only: pair Devices new devices (Workspace) in DSN.
	DSN       string `json:"dsn,omitempty"`
	Workspace string `json:"workspace,omitempty"`
	Devices   int    `json:"devices,omitempty"`
}

// spec is the run's workload with its overrides.
func (d runData) spec() (workload.Spec, error) {
	spec, err := workload.Named(d.Workload)
	if err != nil {
		return spec, err
	}
	if d.Mix != "" {
		if err := spec.SetMix(d.Mix); err != nil {
			return spec, err
		}
	}
	for _, o := range []struct {
		v   int
		dst *int
		n   string
	}{{d.Pages, &spec.Pages, "pages"}, {d.WindowsPerPage, &spec.WindowsPerPage, "windowsPerPage"},
		{d.Nodes, &spec.Nodes, "nodes"}, {d.Burst, &spec.Burst, "burst"}} {
		if o.v < 0 {
			return spec, fmt.Errorf("%s %d: must not be negative", o.n, o.v)
		}
		if o.v > 0 {
			*o.dst = o.v
		}
	}
	return spec, nil
}

func (d runData) plan() (plan.Plan, workload.Spec, error) {
	spec, err := d.spec()
	if err != nil {
		return plan.Plan{}, spec, err
	}
	return plan.New(d.RunID, spec, d.Editors), spec, nil
}

func (d runData) token(editor int) string {
	if len(d.Tokens) > 0 {
		return d.Tokens[editor%len(d.Tokens)]
	}
	return d.Token
}

// segment is this process's execution segment, and the global ids
// (1-based, as exec.vu.idInTest) of the VUs it runs out of total.
func segment(st *lib.State, total int) (string, []int, error) {
	et, err := lib.NewExecutionTuple(st.Options.ExecutionSegment, st.Options.ExecutionSegmentSequence)
	if err != nil {
		return "", nil, err
	}
	name := "0:1"
	if st.Options.ExecutionSegment != nil {
		name = st.Options.ExecutionSegment.String()
	}
	var ids []int
	idx := lib.NewSegmentedIndex(et)
	for {
		_, global := idx.Next()
		if global > int64(total) {
			break
		}
		ids = append(ids, int(global))
	}
	return name, ids, nil
}

// editorIndex maps the VUs of the run (global ids, 1-based) to their
// editors in the plan (0-based). By default editor = id − 1, whatever the
// segments. With pagesBySegment, the editors go segment by segment in
// the order of the execution segment sequence (every process computes
// the same), each segment's VUs in k6's order: a page's consecutive
// editors then belong to one segment when every segment's count is a
// multiple of the windows per page, which it checks.
func editorIndex(st *lib.State, d runData, perPage int) (map[int]int, error) {
	out := map[int]int{}
	if !d.PagesBySegment {
		for id := 1; id <= d.Editors; id++ {
			out[id] = id - 1
		}
		return out, nil
	}
	seq := lib.GetFilledExecutionSegmentSequence(st.Options.ExecutionSegmentSequence, st.Options.ExecutionSegment)
	for _, seg := range seq {
		et, err := lib.NewExecutionTuple(seg, &seq)
		if err != nil {
			return nil, err
		}
		idx := lib.NewSegmentedIndex(et)
		n := 0
		for {
			_, global := idx.Next()
			if global > int64(d.Editors) {
				break
			}
			out[int(global)] = len(out)
			n++
		}
		if perPage > 0 && n%perPage != 0 {
			return nil, fmt.Errorf("pagesBySegment: segment %s runs %d of the %d editors, not whole pages of %d windows: a page would span two processes (make each segment's editors a multiple of windowsPerPage)",
				seg, n, d.Editors, perPage)
		}
	}
	return out, nil
}

// plannedVUs is the most VUs the whole test (every segment) may run.
func plannedVUs(st *lib.State) int {
	full, err := lib.NewExecutionTuple(nil, nil)
	if err != nil || len(st.Options.Scenarios) == 0 {
		return 0
	}
	return int(lib.GetMaxPossibleVUs(st.Options.Scenarios.GetFullExecutionRequirements(full)))
}

// setup lays out the run and creates the pages this process's editors
// create (the holders of their first windows): the setup command ids
// derive from the run id, so every process of the run agrees and a
// repeat is answered, not redone. It returns the data for kbkit.editor.
func (mi *ModuleInstance) setup(opts sobek.Value) (map[string]any, error) {
	var d runData
	if err := decode("setup", opts, &d); err != nil {
		return nil, err
	}
	if err := (server{d.URL, d.Token}).check("setup"); err != nil {
		return nil, err
	}
	st, err := mi.inVU("setup")
	if err != nil {
		return nil, err
	}
	if d.Workload == "" {
		d.Workload = "hot-page"
	}
	if _, err := d.spec(); err != nil {
		return nil, fmt.Errorf("kbkit.setup: %w", err)
	}
	if d.Editors == 0 {
		d.Editors = plannedVUs(st)
	}
	if d.Editors < 1 {
		return nil, fmt.Errorf("kbkit.setup: editors %d: give editors, or scenarios with VUs", d.Editors)
	}
	seg, mine, err := segment(st, d.Editors)
	if err != nil {
		return nil, fmt.Errorf("kbkit.setup: %w", err)
	}
	d.Segment = seg
	if d.RunID == "" {
		if seg != "0:1" {
			return nil, fmt.Errorf("kbkit.setup: execution segment %s: a run over several k6 processes needs runId, the same in each (e.g. KBKIT_RUN_ID)", seg)
		}
		d.RunID = uuid.NewString()
	}
	p, _, err := d.plan()
	if err != nil {
		return nil, fmt.Errorf("kbkit.setup: %w", err)
	}
	if p.Pages*p.PerPage < d.Editors {
		return nil, fmt.Errorf("kbkit.setup: %d pages × %d windows leave some of %d editors without a window", p.Pages, p.PerPage, d.Editors)
	}
	ctx := mi.vu.Context()
	if d.DSN != "" && d.Devices > 0 {
		toks, err := mi.pair(mi.vu.Runtime().ToValue(map[string]any{"dsn": d.DSN, "workspace": d.Workspace, "count": d.Devices}))
		if err != nil {
			return nil, err
		}
		d.Tokens = toks
	}
	d.DSN, d.Devices, d.Workspace = "", 0, ""
	dev, err := mi.root.deviceID(ctx, d.URL, d.Token)
	if err != nil {
		return nil, fmt.Errorf("kbkit.setup: %w", err)
	}
	index, err := editorIndex(st, d, p.PerPage)
	if err != nil {
		return nil, fmt.Errorf("kbkit.setup: %w", err)
	}
	here := map[int]bool{}
	for _, id := range mine {
		here[index[id]] = true
	}
	c := client.New(d.URL, d.Token)
	var (
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
		next  = make(chan int)
	)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				if err := p.CreatePage(ctx, c, dev, i); err != nil {
					errMu.Lock()
					first = cmpErr(first, err)
					errMu.Unlock()
					continue
				}
				mi.root.mu.Lock()
				mi.root.created[p.PageID(i)] = true
				mi.root.mu.Unlock()
			}
		})
	}
	for i := 0; i < p.Pages; i++ {
		if here[p.Creator(i)] {
			next <- i
		}
	}
	close(next)
	wg.Wait()
	if first != nil {
		return nil, fmt.Errorf("kbkit.setup: %w", first)
	}
	b, _ := json.Marshal(d)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out, nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// Editor is a VU's editor of the run: its windows, as the plan lays them
// out for its global VU id.
type Editor struct {
	Index   int       `js:"index"`
	Windows []*Window `js:"windows"`
	rng     *rand.Rand
	tag     string
}

// editor opens (once per VU) the windows of the VU's editor.
func (mi *ModuleInstance) editor(data sobek.Value) (*Editor, error) {
	if mi.ed != nil {
		return mi.ed, nil
	}
	var d runData
	if err := decode("editor", data, &d); err != nil {
		return nil, err
	}
	st, err := mi.inVU("editor")
	if err != nil {
		return nil, err
	}
	if d.RunID == "" || d.Editors < 1 || d.URL == "" {
		return nil, errors.New("kbkit.editor: pass the data kbkit.setup returned (setup() { return kbkit.setup({...}) })")
	}
	p, _, err := d.plan()
	if err != nil {
		return nil, fmt.Errorf("kbkit.editor: %w", err)
	}
	index, err := editorIndex(st, d, p.PerPage)
	if err != nil {
		return nil, fmt.Errorf("kbkit.editor: %w", err)
	}
	e, ok := index[int(st.VUIDGlobal)]
	if !ok {
		return nil, fmt.Errorf("kbkit.editor: VU %d has no editor: the run has %d (editors in kbkit.setup; by default the test's most VUs)", st.VUIDGlobal, d.Editors)
	}
	for i := 0; i < p.Pages; i++ {
		mi.root.sess.AddTitle(p.PageID(i), p.Title(i))
	}
	ed := &Editor{Index: e, rng: rand.New(rand.NewPCG(uint64(d.Seed), uint64(e))), tag: p.Tag()}
	for _, s := range p.Windows(e) {
		// Every process lays out the pages its editors open, once (a
		// repeat of setup's commands is answered, not redone): setup may
		// have run in another process, for another segment's editors, and
		// may still be creating the page's seed nodes there. Once every
		// setup command was answered here the layout is whole: no editor
		// edits a page whose seed nodes are still being created.
		if err := mi.ensurePage(d, p, s.Page); err != nil {
			return nil, err
		}
		w, err := mi.open(d.URL, d.token(e), p.PageID(s.Page), 0, e)
		if err != nil {
			for _, w := range ed.Windows {
				w.Close()
			}
			return nil, err
		}
		ed.Windows = append(ed.Windows, w)
	}
	mi.ed = ed
	return ed, nil
}

// ensurePage creates page i of the plan unless this process did.
func (mi *ModuleInstance) ensurePage(d runData, p plan.Plan, i int) error {
	r := mi.root
	r.mu.Lock()
	done := r.created[p.PageID(i)]
	r.mu.Unlock()
	if done {
		return nil
	}
	ctx := mi.vu.Context()
	dev, err := r.deviceID(ctx, d.URL, d.Token)
	if err == nil {
		err = p.CreatePage(ctx, client.New(d.URL, d.Token), dev, i)
	}
	if err != nil {
		return fmt.Errorf("kbkit.editor: %w", err)
	}
	r.mu.Lock()
	r.created[p.PageID(i)] = true
	r.mu.Unlock()
	return nil
}
