package kbkit

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.k6.io/k6/js/modulestest"
	"go.k6.io/k6/lib"
	"go.k6.io/k6/metrics"

	lgmetrics "github.com/subspace/kbkit/loadgen/metrics"
	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/sim"
)

func TestMain(m *testing.M) { os.Exit(pgprovider.RunTests(m)) }

// startServer starts the reference server and returns its URL and a
// token.
func startServer(t *testing.T) (string, string) {
	url, token, _ := startServerDSN(t)
	return url, token
}

func startServerDSN(t *testing.T) (url, token, dsn string) {
	t.Helper()
	ctx := context.Background()
	dsn = pgprovider.ForTest(t)
	e, err := sim.NewEmbedded(ctx, dsn, sim.EmbeddedOptions{Instances: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	toks, err := e.Devices(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	return e.Endpoints()[0], toks[0], dsn
}

// vu is one k6 VU running the extension: its own JS runtime and module
// instance over a shared root, pushing samples to a shared channel.
type vu struct {
	rt *modulestest.Runtime
	mi *ModuleInstance
}

func newVU(t *testing.T, root *RootModule, samples chan metrics.SampleContainer, id uint64, opts lib.Options) vu {
	t.Helper()
	rt := modulestest.NewRuntime(t)
	mi := root.NewModuleInstance(rt.VU).(*ModuleInstance)
	if err := rt.VU.Runtime().Set("kbkit", mi.Exports().Default); err != nil {
		t.Fatal(err)
	}
	reg := rt.VU.InitEnvField.Registry
	rt.MoveToVUContext(&lib.State{Samples: samples, Tags: lib.NewVUStateTags(reg.RootTagSet().With("scenario", "test")),
		VUID: id, VUIDGlobal: id, Options: opts})
	return vu{rt: rt, mi: mi}
}

func (v vu) run(t *testing.T, js string) string {
	t.Helper()
	val, err := v.rt.RunOnEventLoop(js)
	if err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	return val.String()
}

// drain collects the samples pushed so far by name.
func drain(ch chan metrics.SampleContainer) map[string][]metrics.Sample {
	out := map[string][]metrics.Sample{}
	for {
		select {
		case c := <-ch:
			for _, s := range c.GetSamples() {
				out[s.Metric.Name] = append(out[s.Metric.Name], s)
			}
		default:
			return out
		}
	}
}

func sum(ss []metrics.Sample) float64 {
	t := 0.0
	for _, s := range ss {
		t += s.Value
	}
	return t
}

// TestWindowAPI: a script's window types, creates, moves, indents,
// outdents, deletes, undoes and redoes against the reference server; each
// committed command is one kbkit_commit and one kbkit_echo sample tagged
// with its type, the counters start at zero, waitConverged measures.
func TestWindowAPI(t *testing.T) {
	url, token := startServer(t)
	samples := make(chan metrics.SampleContainer, 10000)
	v := newVU(t, New(), samples, 1, lib.Options{})
	out := v.run(t, fmt.Sprintf(`
		const opts = {url: %q, token: %q};
		const p = kbkit.createPage(Object.assign({nodes: 3}, opts));
		const w = kbkit.openWindow(Object.assign({page: p.id}, opts));
		const res = {};
		res.type = w.type('s0', 'abc');
		res.created = w.createAfter('s2', 'new');
		res.indent = w.indent(res.created.node);
		res.outdent = w.outdent(res.created.node);
		res.move = w.move(res.created.node, null, null);
		res.setText = w.setText('s1', 'replaced');
		res.undo = w.undo();
		res.afterUndo = w.text('s1');
		res.redo = w.redo();
		res.del = w.delete('s2');
		res.refused = w.indent('no-such-node');
		res.converged = w.waitConverged('5s');
		res.nodes = w.nodes();
		res.s0 = w.text('s0');
		res.s1 = w.text('s1');
		w.close();
		JSON.stringify(res);`, url, token))
	var res struct {
		Type                                    map[string]int
		Created, Indent, Outdent, Move, SetText map[string]any
		Undo, Redo, Del, Refused                map[string]any
		AfterUndo, S0, S1                       string
		Converged                               float64
		Nodes                                   []string
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err, out)
	}
	if res.Type["keystrokes"] != 3 || res.Type["committed"] != 3 || res.S0 != "seed 0abc" {
		t.Errorf("type: %v, s0 %q", res.Type, res.S0)
	}
	for name, r := range map[string]map[string]any{"createAfter": res.Created, "indent": res.Indent, "outdent": res.Outdent,
		"move": res.Move, "setText": res.SetText, "undo": res.Undo, "redo": res.Redo, "delete": res.Del} {
		if r["committed"] != true {
			t.Errorf("%s: %v", name, r)
		}
	}
	if res.AfterUndo != "seed 1" || res.S1 != "replaced" {
		t.Errorf("undo left %q, redo %q", res.AfterUndo, res.S1)
	}
	if res.Refused["committed"] != false || res.Refused["refused"] == nil {
		t.Errorf("indent of a missing node: %v", res.Refused)
	}
	if strings.Join(res.Nodes, ",") != fmt.Sprintf("%s,s0,s1", res.Created["node"]) {
		t.Errorf("nodes %v", res.Nodes)
	}
	committed := 3 + 8
	got := drain(samples)
	if n := len(got[MetricCommit]); n != committed {
		t.Errorf("%d kbkit_commit samples, want %d", n, committed)
	}
	if n := len(got[MetricEcho]); n != committed {
		t.Errorf("%d kbkit_echo samples, want %d", n, committed)
	}
	if n := len(got[MetricConvergence]); n != 1 {
		t.Errorf("%d kbkit_convergence samples, want 1", n)
	}
	types := map[string]int{}
	for _, s := range got[MetricCommit] {
		if wl, _ := s.Tags.Get("workload"); wl != "script" {
			t.Errorf("workload tag %q", wl)
		}
		if sc, _ := s.Tags.Get("scenario"); sc != "test" {
			t.Errorf("the VU's tags are lost: scenario %q", sc)
		}
		typ, _ := s.Tags.Get("type")
		types[typ]++
	}
	if types["edit-text"] != 6 || types["create-after"] != 1 || types["indent"] != 1 || types["delete"] != 1 {
		t.Errorf("commit samples by type %v", types)
	}
	for _, m := range []string{MetricRejections, MetricRefetches, MetricReconnects, MetricErrors} {
		if len(got[m]) == 0 || sum(got[m]) != 0 {
			t.Errorf("%s: %d samples summing to %g, want zeros", m, len(got[m]), sum(got[m]))
		}
	}
}

// TestEditorsShareARun: setup lays out a hot page for two editors, two
// VUs each open their editor's window and run the hot-page workload,
// teardown's finish converges both and writes kbkit's JSON, which lists
// both editors, counts what the samples count and measured fan-out
// between the VUs.
func TestEditorsShareARun(t *testing.T) {
	url, token := startServer(t)
	root := New()
	samples := make(chan metrics.SampleContainer, 100000)
	setup := newVU(t, root, samples, 0, lib.Options{})
	data := setup.run(t, fmt.Sprintf(`JSON.stringify(kbkit.setup({url: %q, token: %q, workload: 'hot-page', editors: 2, nodes: 6}))`, url, token))
	var vus []vu
	for id := uint64(1); id <= 2; id++ {
		vus = append(vus, newVU(t, root, samples, id, lib.Options{}))
	}
	for round := 0; round < 20; round++ {
		for _, v := range vus {
			v.run(t, fmt.Sprintf(`kbkit.workloads.hotPage(kbkit.editor(%s)).type`, data))
		}
	}
	if idx := vus[1].run(t, fmt.Sprintf(`kbkit.editor(%s).index + ':' + kbkit.editor(%s).windows.length`, data, data)); idx != "1:1" {
		t.Errorf("VU 2's editor: %s", idx)
	}
	path := filepath.Join(t.TempDir(), "k6.json")
	teardown := newVU(t, root, samples, 0, lib.Options{})
	fin := teardown.run(t, fmt.Sprintf(`JSON.stringify(kbkit.finish(%s, {json: %q, timeout: 10000}))`, data, path))
	if !strings.Contains(fin, `"windows":2`) || !strings.Contains(fin, `"notConverged":0`) || !strings.Contains(fin, `"diverged":0`) {
		t.Errorf("finish: %s", fin)
	}
	res, err := lgmetrics.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := drain(samples)
	if fmt.Sprint(res.EditorsRan) != "[0 1]" || res.Run.Editors != 2 || !strings.HasPrefix(res.Run.Generator, "k6") || res.Run.Workload != "hot-page" {
		t.Errorf("result: editors %v of %d, run %+v", res.EditorsRan, res.Run.Editors, res.Run)
	}
	if res.Counts.Commands != 40 || res.Counts.Committed != int64(len(got[MetricCommit])) || res.Counts.Committed == 0 {
		t.Errorf("%d operations, %d committed, %d kbkit_commit samples", res.Counts.Commands, res.Counts.Committed, len(got[MetricCommit]))
	}
	if n := len(got[MetricFanout]); n == 0 || int64(n) != res.Hist(lgmetrics.Fanout).Count() {
		t.Errorf("%d kbkit_fanout samples, %d in the result", n, res.Hist(lgmetrics.Fanout).Count())
	}
	if n := len(got[MetricConvergence]); n != 2 || res.Hist(lgmetrics.Convergence).Count() != 2 {
		t.Errorf("%d convergence samples", n)
	}
	if sum(got[MetricErrors]) != 0 || res.Counts.Errors != 0 {
		t.Errorf("errors %v", res.Errors)
	}
	// A third VU has no editor in a run of two.
	extra := newVU(t, root, samples, 3, lib.Options{})
	if _, err := extra.rt.RunOnEventLoop(fmt.Sprintf(`kbkit.editor(%s)`, data)); err == nil || !strings.Contains(err.Error(), "VU 3 has no editor") {
		t.Errorf("VU 3: %v", err)
	}
}

// TestSegmentsSplitEditors: the editors of complementary execution
// segments are disjoint and cover the run, as k6 numbers VUs across
// instances (exec.vu.idInTest).
func TestSegmentsSplitEditors(t *testing.T) {
	seq, err := lib.NewExecutionSegmentSequenceFromString("0,1/3,1/2,1")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]string{}
	for _, s := range []string{"0:1/3", "1/3:1/2", "1/2:1"} {
		seg, err := lib.NewExecutionSegmentFromString(s)
		if err != nil {
			t.Fatal(err)
		}
		name, ids, err := segment(&lib.State{Options: lib.Options{ExecutionSegment: seg, ExecutionSegmentSequence: &seq}}, 17)
		if err != nil {
			t.Fatal(err)
		}
		if name != s || len(ids) == 0 {
			t.Errorf("segment %s: %q, %v", s, name, ids)
		}
		// k6's own numbering of this instance's VUs.
		es := lib.NewExecutionState(nil, must(lib.NewExecutionTuple(seg, &seq)), 0, 0)
		for i, id := range ids {
			if _, global := es.GetUniqueVUIdentifiers(); int(global) != id {
				t.Errorf("segment %s: VU %d is global %d in k6, %d here", s, i+1, global, id)
			}
			if other, dup := seen[id]; dup {
				t.Errorf("VU %d in segments %s and %s", id, other, s)
			}
			seen[id] = s
		}
	}
	if len(seen) != 17 {
		t.Errorf("%d of 17 VUs covered", len(seen))
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestBadInput: missing or misspelt options, calls in the init context,
// a wrong workload target and a segmented run without a run id are clear
// errors.
func TestBadInput(t *testing.T) {
	root := New()
	samples := make(chan metrics.SampleContainer, 100)
	seg, _ := lib.NewExecutionSegmentFromString("0:1/2")
	v := newVU(t, root, samples, 1, lib.Options{ExecutionSegment: seg})
	for js, want := range map[string]string{
		`kbkit.openWindow({token: 'x', page: 'p'})`:                                               "url is required",
		`kbkit.openWindow({url: 'http://127.0.0.1:1', token: 'x'})`:                               "page is required",
		`kbkit.openWindow({url: 'localhost', token: 'x', page: 'p'})`:                             "want http://HOST:PORT",
		`kbkit.setup({url: 'http://127.0.0.1:1', token: 'x', edtors: 3})`:                         `unknown field "edtors"`,
		`kbkit.setup({url: 'http://127.0.0.1:1', token: 'x', editors: 4})`:                        "needs runId",
		`kbkit.setup({url: 'http://127.0.0.1:1', token: 'x', workload: 'nope'})`:                  "unknown workload",
		`kbkit.workloads.typing({})`:                                                              "want an editor",
		`kbkit.editor({})`:                                                                        "pass the data kbkit.setup returned",
		`kbkit.pair({count: 1})`:                                                                  "dsn is required",
		`kbkit.setup({url: 'http://127.0.0.1:1', token: 'x', editors: 4, runId: 'r', pages: -1})`: "must not be negative",
	} {
		_, err := v.rt.RunOnEventLoop(js)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", js, err, want)
		}
	}
	init := modulestest.NewRuntime(t)
	mi := root.NewModuleInstance(init.VU).(*ModuleInstance)
	_ = init.VU.Runtime().Set("kbkit", mi.Exports().Default)
	if _, err := init.RunOnEventLoop(`kbkit.createPage({url: 'http://127.0.0.1:1', token: 'x'})`); err == nil || !strings.Contains(err.Error(), "init context") {
		t.Errorf("init context: %v", err)
	}
}

// TestEditorsCreateTheirPages: when setup ran elsewhere (another process,
// another segment), each page's creator editor creates it on opening, and
// the other editors wait for it.
func TestEditorsCreateTheirPages(t *testing.T) {
	url, token := startServer(t)
	root := New()
	samples := make(chan metrics.SampleContainer, 10000)
	data := fmt.Sprintf(`{"url": %q, "token": %q, "workload": "many-pages", "pages": 4, "editors": 2, "runId": %q, "segment": "0:1/2"}`,
		url, token, "elsewhere-"+t.Name())
	for id := uint64(1); id <= 2; id++ {
		v := newVU(t, root, samples, id, lib.Options{})
		if got := v.run(t, fmt.Sprintf(`const e = kbkit.editor(%s); kbkit.workloads.manyPages(e); e.windows.length`, data)); got != "4" {
			t.Errorf("VU %d: %s windows, want 4", id, got)
		}
	}
	teardown := newVU(t, root, samples, 0, lib.Options{})
	if fin := teardown.run(t, fmt.Sprintf(`JSON.stringify(kbkit.finish(%s))`, data)); !strings.Contains(fin, `"windows":8`) || !strings.Contains(fin, `"notConverged":0`) {
		t.Errorf("finish: %s", fin)
	}
}

// TestPairAndSetupDevices: kbkit.pair pairs devices of one workspace in
// the server's database, and setup with dsn and devices spreads the
// editors over new devices: the two editors' commands come from two
// devices.
func TestPairAndSetupDevices(t *testing.T) {
	url, _, dsn := startServerDSN(t)
	root := New()
	samples := make(chan metrics.SampleContainer, 10000)
	v := newVU(t, root, samples, 1, lib.Options{})
	out := v.run(t, fmt.Sprintf(`
		const toks = kbkit.pair({dsn: %q, workspace: 'k6-test', count: 2});
		const p = kbkit.createPage({url: %q, token: toks[0], nodes: 1});
		const w = kbkit.openWindow({url: %q, token: toks[1], page: p.id});
		const r = w.setText('s0', 'from the second device');
		w.close();
		JSON.stringify({n: toks.length, distinct: toks[0] !== toks[1], committed: r.committed});`, dsn, url, url))
	if out != `{"n":2,"distinct":true,"committed":true}` {
		t.Errorf("pair: %s", out)
	}
	data := v.run(t, fmt.Sprintf(`const t0 = kbkit.pair({dsn: %q, workspace: 'k6-test', count: 1})[0];
		JSON.stringify(kbkit.setup({url: %q, token: t0, dsn: %q, workspace: 'k6-test', devices: 2, editors: 2, workload: 'hot-page'}))`, dsn, url, dsn))
	var d runData
	if err := json.Unmarshal([]byte(data), &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Tokens) != 2 || d.Tokens[0] == d.Tokens[1] || d.DSN != "" {
		t.Fatalf("setup data: %d tokens, dsn %q", len(d.Tokens), d.DSN)
	}
	devices := map[string]bool{}
	for id := uint64(1); id <= 2; id++ {
		vu := newVU(t, root, samples, id, lib.Options{})
		vu.run(t, fmt.Sprintf(`kbkit.workloads.hotPage(kbkit.editor(%s))`, data))
		devices[vu.mi.ed.Windows[0].ew.Client().DeviceID()] = true
	}
	if len(devices) != 2 {
		t.Errorf("the editors used %d devices, want 2", len(devices))
	}
	newVU(t, root, samples, 0, lib.Options{}).run(t, fmt.Sprintf(`kbkit.finish(%s)`, data))
}
