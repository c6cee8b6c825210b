package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/kbcore"
	lgeditor "github.com/subspace/kbkit/loadgen/editor"
	"github.com/subspace/kbkit/loadgen/metrics"
	"github.com/subspace/kbkit/loadgen/plan"
	"github.com/subspace/kbkit/loadgen/workload"
	"github.com/subspace/kbkit/target"

	"github.com/subspace/kbkit/internal/cputime"
)

// Models.
const (
	Open   = "open"   // arrivals paced by a Pacer, whatever the latency
	Closed = "closed" // each editor waits for its command, thinks, goes on
)

// Commands' transports.
const (
	CommandsHTTP = "http" // an HTTP POST of kb.command each
	CommandsWS   = "ws"   // a kb.command mutation on the window's WebSocket
)

// Config is one run.
type Config struct {
	// Workload is the mix of operations and the shape of the pages.
	Workload workload.Spec
	// Model is Open or Closed.
	Model string
	// Commands is how editors send their commands: CommandsHTTP (an HTTP
	// POST each, the default) or CommandsWS (a mutation on the window's
	// WebSocket, spec/PROTOCOL.md section 5.1).
	Commands string
	// Pacer is the open model's schedule, for the whole run: a shard runs
	// its share (1/N of the rate).
	Pacer Pacer
	// Editors is the number of virtual editors of the whole run (all
	// shards); each holds one or more windows.
	Editors int
	// Think is the closed model's mean pause between an editor's
	// operations (uniform in [Think/2, 3·Think/2]).
	Think time.Duration
	// Duration of the load.
	Duration time.Duration
	// Warmup runs the load this long before the measured Duration and
	// forgets what it recorded: connection setup, caches and the first
	// plans do not count (pgbench reports "without initial connection
	// time" alike). The open model warms up at the pacer's starting rate.
	Warmup time.Duration
	// Drain bounds the wait for commands in flight and for convergence
	// after the load (default 15s).
	Drain time.Duration
	// Devices is how many devices to spread the editors over (default:
	// one per editor, at most 64; a remote target cycles its tokens).
	Devices int
	// Seed seeds the editors' random sources.
	Seed int64
	// RunID names the run: page ids and setup command ids derive from it,
	// so that the shards of a run lay out the same pages. Required with
	// more than one shard; random otherwise.
	RunID string
	// Shard is this process's share of the editors.
	Shard Shard
	// Server describes the target in the result ("embedded" or its URL).
	Server string
	// Status, if set, is called about twice a second with the live state.
	Status func(Status)
	// Phase, if set, is called as the run enters each phase: load,
	// converge, done (a CPU profile can cover the load alone).
	Phase func(phase string)
	// Logf, if set, receives progress messages.
	Logf func(format string, args ...any)
}

// Status is the live state of a run, for the console.
type Status struct {
	Phase    string // setup, warmup, load, converge, done
	Model    string
	Elapsed  time.Duration // of the measured load
	Warmup   time.Duration // warm-up left
	Duration time.Duration
	Target   float64 // open model: this shard's target rate now (ops/s)
	Achieved float64 // commands committed per second, last 5 s
	InFlight int64
	Windows  int
	Pages    int
	// Recent are the p99 latencies of the last 5 s.
	Recent map[string]time.Duration
	Totals metrics.Counts
}

// maxRecorders caps the metric workers: editors share recorders round
// robin past it, so that memory does not grow with the editor count.
const maxRecorders = 16

type device struct {
	c  *client.Client
	id string
}

type page struct {
	idx  int
	id   string
	wins []*window // this process's windows on the page
}

// window is an editor's measured window on a page (editor.Window) and
// its workload's cursor.
type window struct {
	ed  *editor
	pg  *page
	ew  *lgeditor.Window // set once open
	cur workload.Cursor
}

type editor struct {
	idx  int
	dev  *device
	rec  *metrics.Recorder
	rng  *rand.Rand
	wins []*window
}

type runner struct {
	cfg     Config
	target  target.Target
	devices []*device
	pages   []*page
	editors []*editor
	wins    []*window
	recs    []*metrics.Recorder
	// sess is what the windows share: pages, stamps of the commands in
	// flight, titles. It measures once the warm-up ends: an operation
	// counts (as an operation, and its outcome and echoes) only if it
	// started after, since one started in the warm-up and decided after
	// it would otherwise count as committed but not as an operation.
	sess     *lgeditor.Session
	inflight atomic.Int64
	closing  atomic.Bool
	renames  atomic.Int64
	plan     plan.Plan
	phase    atomic.Value
	startMu  sync.Mutex
	start    time.Time // the measured load's start (after the warm-up)
	// measuring is held (read) by an operation from its decision to be
	// measured or not to its end, and (write) by the start of the
	// measurement: no operation sees the measurement start halfway.
	measuring sync.RWMutex
}

func (r *runner) logf(format string, args ...any) {
	if r.cfg.Logf != nil {
		r.cfg.Logf(format, args...)
	}
}

var widenTransport sync.Once

// Run runs one load against target and returns its metrics. An error
// means the run could not proceed (setup failed); failures during the
// load are counted in the result.
func Run(ctx context.Context, target target.Target, cfg Config) (*metrics.Result, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	// client.Client posts through http.DefaultTransport, which keeps two
	// idle connections per host: past two concurrent editors every command
	// would open a new TCP connection, and the run would measure that.
	widenTransport.Do(func() {
		if t, ok := http.DefaultTransport.(*http.Transport); ok {
			t.MaxIdleConns = 0
			t.MaxIdleConnsPerHost = 4096
		}
	})
	r := &runner{cfg: cfg, target: target, sess: lgeditor.NewSession()}
	r.sess.SetMeasuring(false)
	r.phase.Store("setup")
	stopStatus := r.statusLoop()
	defer stopStatus()
	defer r.closeWindows()
	if err := r.setup(ctx); err != nil {
		return nil, err
	}
	return r.load(ctx)
}

func (c *Config) defaults() error {
	if c.Editors <= 0 {
		return errors.New("loadgen: need at least one editor")
	}
	if c.Duration <= 0 {
		return errors.New("loadgen: duration must be positive")
	}
	if c.Model == "" {
		c.Model = Closed
	}
	if c.Model != Open && c.Model != Closed {
		return fmt.Errorf("loadgen: model %q: open or closed", c.Model)
	}
	if c.Commands == "" {
		c.Commands = CommandsHTTP
	}
	if c.Commands != CommandsHTTP && c.Commands != CommandsWS {
		return fmt.Errorf("loadgen: commands %q: http or ws", c.Commands)
	}
	if c.Model == Open {
		if _, ok := c.Pacer.At(1); !ok {
			return errors.New("loadgen: the open model needs a rate (--rate or --stage)")
		}
	}
	if c.Drain <= 0 {
		c.Drain = 15 * time.Second
	}
	if c.Devices <= 0 {
		c.Devices = min(c.Editors, 64)
	}
	c.Shard = c.Shard.norm()
	if c.Shard.N > 1 && c.RunID == "" {
		return errors.New("loadgen: a sharded run needs --run-id, the same on every shard")
	}
	if c.RunID == "" {
		c.RunID = uuid.NewString()
	}
	if c.Workload.Mix == nil {
		return errors.New("loadgen: no workload")
	}
	if c.Server == "" {
		c.Server = "embedded"
	}
	return nil
}

// ---- the load ----

func (r *runner) setPhase(p string) {
	r.phase.Store(p)
	r.logf("phase %s", p)
	if r.cfg.Phase != nil {
		r.cfg.Phase(p)
	}
}

func (r *runner) load(ctx context.Context) (*metrics.Result, error) {
	cfg := r.cfg
	begin := time.Now()
	r.startMu.Lock()
	r.start = begin.Add(cfg.Warmup)
	r.startMu.Unlock()
	// At the end of the warm-up every recorder starts afresh.
	var cpu0 time.Duration
	measured := make(chan struct{})
	measure := func() {
		r.measuring.Lock()
		for _, rec := range r.recs {
			rec.Reset()
		}
		r.sess.SetMeasuring(true) // after every reset: no measured count is wiped
		r.measuring.Unlock()
		cpu0 = cputime.Self()
		r.setPhase("load")
		close(measured)
	}
	// measureAt starts the measurement when the warm-up is over.
	measureAt := func() {
		t := time.NewTimer(time.Until(r.start))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		measure()
	}
	if cfg.Warmup > 0 {
		r.setPhase("warmup")
	} else {
		measure()
	}
	loadCtx, stopLoad := context.WithDeadline(ctx, r.start.Add(cfg.Duration))
	defer stopLoad()
	// Commands in flight when the load ends are still decided, within the
	// drain time.
	opCtx, stopOps := context.WithDeadline(context.WithoutCancel(ctx), r.start.Add(cfg.Duration+cfg.Drain))
	defer stopOps()

	// The operations in flight, sampled ten times a second (each second
	// keeps its peak), once measured.
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case now := <-tick.C:
				if r.sess.Measuring() {
					r.recs[0].InFlight(now, r.inflight.Load())
				}
			case <-loadCtx.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	switch cfg.Model {
	case Closed:
		if cfg.Warmup > 0 {
			go measureAt()
		}
		for _, ed := range r.editors {
			wg.Go(func() {
				for loadCtx.Err() == nil {
					r.op(opCtx, ed, time.Now())
					if cfg.Think > 0 {
						think := time.Duration(float64(cfg.Think) * (0.5 + ed.rng.Float64()))
						select {
						case <-time.After(think):
						case <-loadCtx.Done():
						}
					}
				}
			})
		}
	case Open:
		// Each editor takes at most one operation at a time; an operation
		// the pacer makes due while every editor is busy and the queue is
		// full could not start on time: it is dropped, not delayed.
		queue := make(chan time.Time, len(r.editors))
		pacer := r.shardPacer()
		pacerRec := r.recs[0]
		paced := make(chan struct{})
		go func() {
			defer close(paced)
			if cfg.Warmup > 0 {
				// The pacer resets the recorders itself, so that no
				// measured operation is counted before.
				pace(loadCtx, Constant(pacer.Rate(0)), begin, r.start, queue, pacerRec)
				measureAt()
			}
			pace(loadCtx, pacer, r.start, r.start.Add(cfg.Duration), queue, pacerRec)
		}()
		for _, ed := range r.editors {
			wg.Go(func() {
				for {
					select {
					case due := <-queue:
						r.op(opCtx, ed, due)
					case <-loadCtx.Done():
						return
					}
				}
			})
		}
		<-paced
		wg.Wait()
		for n := len(queue); n > 0; n-- {
			if due := <-queue; !due.Before(r.start) { // the warm-up's are not counted
				pacerRec.Count(metrics.Dropped, time.Now(), 1) // due, never started
			}
		}
	}
	wg.Wait()
	end := time.Now()
	<-measured
	cpu := cputime.Self() - cpu0
	r.setPhase("converge")
	r.converge(end)
	r.setPhase("done")
	r.closeWindows()

	res, err := metrics.Collect(r.recs)
	if err != nil {
		return nil, err
	}
	res.SetSpan(r.start, end)
	res.CPUSeconds = cpu.Seconds()
	res.Shards = []string{cfg.Shard.String()}
	res.EditorsRan = cfg.Shard.Editors(cfg.Editors)
	nPages, perPage := cfg.Workload.Layout(cfg.Editors)
	res.Run = metrics.RunInfo{Workload: cfg.Workload.Name, Model: cfg.Model, Commands: cfg.Commands, Editors: cfg.Editors,
		Pages: nPages, WindowsPerPage: perPage, Duration: cfg.Duration.String(), Server: cfg.Server,
		Warmup: durString(cfg.Warmup),
		Seed:   cfg.Seed, RunID: cfg.RunID}
	if cfg.Model == Open {
		if len(cfg.Pacer.Stages) > 0 {
			res.Run.Stages = stagesString(cfg.Pacer)
		} else {
			res.Run.Rate = cfg.Pacer.Start
		}
	} else if cfg.Think > 0 {
		res.Run.Think = cfg.Think.String()
	}
	return res, nil
}

func durString(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

func stagesString(p Pacer) string {
	s := ""
	if p.Start > 0 {
		s = fmt.Sprintf("start %g, ", p.Start)
	}
	for i, st := range p.Stages {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf("%s:%g", st.Duration, st.Rate)
	}
	return s
}

// shardPacer is this shard's share of the run's schedule.
func (r *runner) shardPacer() Pacer {
	n := float64(r.cfg.Shard.N)
	p := Pacer{Start: r.cfg.Pacer.Start / n}
	for _, s := range r.cfg.Pacer.Stages {
		p.Stages = append(p.Stages, Stage{Duration: s.Duration, Rate: s.Rate / n})
	}
	return p
}

// pace offers each operation to queue at its intended start until end.
// An operation that finds the queue full is dropped: it could not start
// on time. Operations are offered late when the process was busy, still
// stamped with their intended start, so their latency counts the delay.
func pace(ctx context.Context, p Pacer, start, end time.Time, queue chan<- time.Time, rec *metrics.Recorder) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for n := int64(0); ; n++ {
		off, ok := p.At(n)
		due := start.Add(off)
		if !ok || !due.Before(end) {
			return
		}
		if wait := time.Until(due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-ctx.Done():
				return
			}
		}
		now := time.Now()
		rec.Count(metrics.Due, now, 1)
		select {
		case queue <- due:
		default:
			rec.Count(metrics.Dropped, now, 1)
		}
	}
}

// op is one operation of editor ed, intended to start at intended: draw
// a command for one of its windows, apply it locally, post it (retrying
// an undecided command with the same id) and record the outcome
// (editor.Window.Local).
//
// An operation of the open model's warm-up that an editor takes from the
// queue once the measurement started is not started: its due was counted
// in the warm-up (and wiped with it), so it would count as started but
// never due (on a busy machine, where the queue is not empty when the
// warm-up ends: "93 started + 8 dropped != 100 due").
func (r *runner) op(ctx context.Context, ed *editor, intended time.Time) {
	r.measuring.RLock()
	defer r.measuring.RUnlock()
	if r.sess.Measuring() && intended.Before(r.start) {
		return
	}
	r.inflight.Add(1)
	defer r.inflight.Add(-1)
	w := ed.wins[ed.rng.IntN(len(ed.wins))]
	id := uuid.NewString()
	titles := r.sess.Titles()
	var title string
	if r.cfg.Workload.Mix[workload.Rename] > 0 {
		title = fmt.Sprintf("LG %s s%d r%d", r.plan.Tag(), r.cfg.Shard.I, r.renames.Add(1))
	}
	w.ew.Local(ctx, r.cfg.Workload.Name, intended, func(doc kbcore.Doc) kbcore.Command {
		return r.cfg.Workload.Next(ed.rng, workload.Context{Doc: doc, ID: id, Titles: titles, Title: title}, &w.cur)
	})
}
