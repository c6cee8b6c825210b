// Package kbkit is the k6 extension k6/x/kbkit: kbkit's virtual editors
// inside k6, a thin binding over kbkit loadgen's measured editor
// (loadgen/editor). Each editor is a VU holding real windows (client.Window:
// kbcore.Window over the wire client, each with its own subscription), the
// same windows, workloads and page layout as kbkit loadgen, so k6's
// executors, thresholds, outputs and distribution (--execution-segment,
// k6-operator) drive them. index.d.ts describes the JS API.
//
//	import kbkit from 'k6/x/kbkit';
//	export function setup() { return kbkit.setup({ url: __ENV.KBKIT_URL, token: __ENV.KBKIT_TOKEN, workload: 'hot-page' }); }
//	export default function (data) { kbkit.workloads.hotPage(kbkit.editor(data)); }
//	export function teardown(data) { kbkit.finish(data, { json: __ENV.KBKIT_JSON }); }
//
// Metrics, per event: kbkit_commit, kbkit_echo, kbkit_fanout,
// kbkit_convergence (Trends, ms), kbkit_rejections, kbkit_refetches,
// kbkit_reconnects, kbkit_errors (Counters), tagged with workload and
// command type (and code, kind). Echoes arrive on each window's reader
// goroutine; their samples wait in a buffer that the next call into the
// extension from any VU hands to k6, since k6 takes samples only from a
// VU while the test runs.
package kbkit

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.k6.io/k6/js/modules"
	"go.k6.io/k6/metrics"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/loadgen/editor"
	lgmetrics "github.com/subspace/kbkit/loadgen/metrics"
)

func init() { modules.Register("k6/x/kbkit", New()) }

// Metric names.
const (
	MetricCommit      = "kbkit_commit"
	MetricEcho        = "kbkit_echo"
	MetricFanout      = "kbkit_fanout"
	MetricConvergence = "kbkit_convergence"
	MetricRejections  = "kbkit_rejections"
	MetricRefetches   = "kbkit_refetches"
	MetricReconnects  = "kbkit_reconnects"
	MetricErrors      = "kbkit_errors"
)

// recorders caps the kbkit JSON recorders; VUs share them round robin.
const recorders = 16

// RootModule is the extension's state in one k6 process, shared by its
// VUs: the measured editor's session (the open windows by page, the
// stamps of commands in flight, the titles), the buffered samples, and
// kbkit's own recorders for the JSON result.
type RootModule struct {
	sess    *editor.Session
	mu      sync.Mutex
	devices map[string]string // token -> device id
	created map[string]bool   // pages of a run this process created
	ran     map[int]bool      // editors whose windows this process opened
	opened  int               // windows opened (seeds their random sources)
	recs    []*lgmetrics.Recorder
	nextRec int
	started time.Time // the first command
	cpu0    time.Duration

	renames atomic.Int64

	sampleMu sync.Mutex
	samples  []metrics.Sample

	m *kbMetrics // registered by the first instance made in an init context
}

// New returns the root module (one per process; modules.Register holds
// it).
func New() *RootModule {
	r := &RootModule{sess: editor.NewSession(), devices: map[string]string{}, ran: map[int]bool{},
		created: map[string]bool{}}
	for range recorders {
		r.recs = append(r.recs, lgmetrics.NewRecorder())
	}
	return r
}

type kbMetrics struct {
	commit, echo, fanout, convergence           *metrics.Metric
	rejections, refetches, reconnects, failures *metrics.Metric
}

// ModuleInstance is the module in one VU.
type ModuleInstance struct {
	root *RootModule
	vu   modules.VU
	m    *kbMetrics
	rec  *lgmetrics.Recorder
	ed   *Editor // this VU's editor, once kbkit.editor opened it
}

var widenTransport sync.Once

// NewModuleInstance registers the metrics (in the init context) and
// returns the VU's instance.
func (r *RootModule) NewModuleInstance(vu modules.VU) modules.Instance {
	mi := &ModuleInstance{root: r, vu: vu}
	if env := vu.InitEnv(); env != nil {
		reg := env.Registry // one per test: registering again returns the same metrics
		mi.m = &kbMetrics{
			commit:      reg.MustNewMetric(MetricCommit, metrics.Trend, metrics.Time),
			echo:        reg.MustNewMetric(MetricEcho, metrics.Trend, metrics.Time),
			fanout:      reg.MustNewMetric(MetricFanout, metrics.Trend, metrics.Time),
			convergence: reg.MustNewMetric(MetricConvergence, metrics.Trend, metrics.Time),
			rejections:  reg.MustNewMetric(MetricRejections, metrics.Counter),
			refetches:   reg.MustNewMetric(MetricRefetches, metrics.Counter),
			reconnects:  reg.MustNewMetric(MetricReconnects, metrics.Counter),
			failures:    reg.MustNewMetric(MetricErrors, metrics.Counter),
		}
	}
	r.mu.Lock()
	if mi.m == nil {
		mi.m = r.m
	} else if r.m == nil {
		r.m = mi.m
	}
	mi.rec = r.recs[r.nextRec%len(r.recs)]
	r.nextRec++
	r.mu.Unlock()
	// client.Client posts through http.DefaultTransport, which keeps two
	// idle connections per host: past two VUs every command would open a
	// TCP connection.
	widenTransport.Do(func() {
		if t, ok := http.DefaultTransport.(*http.Transport); ok {
			t.MaxIdleConns = 0
			t.MaxIdleConnsPerHost = 4096
		}
	})
	return mi
}

// Exports are the JS API, as the default export and as named exports.
func (mi *ModuleInstance) Exports() modules.Exports {
	api := map[string]any{
		"openWindow": mi.openWindow,
		"createPage": mi.createPage,
		"pair":       mi.pair,
		"setup":      mi.setup,
		"editor":     mi.editor,
		"finish":     mi.finish,
		"workloads":  mi.workloads(),
	}
	return modules.Exports{Default: api, Named: api}
}

// emit buffers a sample for the next flush.
func (r *RootModule) emit(s metrics.Sample) {
	r.sampleMu.Lock()
	r.samples = append(r.samples, s)
	r.sampleMu.Unlock()
}

// flush hands the buffered samples of every window of the process to k6.
// It runs on the calling VU's goroutine, the only place k6 takes samples
// from (its channel closes when the test ends).
func (mi *ModuleInstance) flush() {
	state := mi.vu.State()
	if state == nil {
		return
	}
	r := mi.root
	r.sampleMu.Lock()
	batch := r.samples
	r.samples = nil
	r.sampleMu.Unlock()
	if len(batch) > 0 {
		metrics.PushIfNotDone(mi.vu.Context(), state.Samples, metrics.Samples(batch))
	}
}

// count emits a counter sample and records it for the JSON result.
func (r *RootModule) count(m *metrics.Metric, tags *metrics.TagSet, at time.Time, v float64) {
	r.emit(metrics.Sample{TimeSeries: metrics.TimeSeries{Metric: m, Tags: tags}, Time: at, Value: v})
}

// latency emits a trend sample (ms).
func (r *RootModule) latency(m *metrics.Metric, tags *metrics.TagSet, at time.Time, d time.Duration) {
	r.emit(metrics.Sample{TimeSeries: metrics.TimeSeries{Metric: m, Tags: tags}, Time: at, Value: metrics.D(d)})
}

// deviceID is the device of token at url, asked once per process.
func (r *RootModule) deviceID(ctx context.Context, url, token string) (string, error) {
	r.mu.Lock()
	id, ok := r.devices[token]
	r.mu.Unlock()
	if ok {
		return id, nil
	}
	var me client.Device
	c := client.New(url, token)
	if err := client.Retry(ctx, 20, func() error { var err error; me, err = c.Whoami(ctx); return err }); err != nil {
		return "", fmt.Errorf("kb.whoami at %s: %w", url, err)
	}
	r.mu.Lock()
	r.devices[token] = me.DeviceID
	r.mu.Unlock()
	return me.DeviceID, nil
}

// begin marks the start of the load at the first command.
func (r *RootModule) begin() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started.IsZero() {
		r.started = time.Now()
		r.cpu0 = cpuTime()
	}
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
