package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/kbcore"
)

type win struct {
	idx    int
	page   int
	dev    int
	c      *client.Client
	w      *kbcore.Window
	sub    *client.Subscription
	inbox  []client.Event
	recv   int64 // highest seq taken from the subscription
	acked  map[string]bool
	gapped bool // a dropped echo is not yet followed by a refetch
}

type sim struct {
	ctx         context.Context
	opts        Options
	seed        int64
	rng         *mrand.Rand
	faults      Faults
	target      Target
	nonce       string
	devices     []deviceInfo
	pages       []string // page ids of this seed
	titles      []string // current titles
	merged      []bool
	known       map[string]int64 // lower bound of each page's head seq
	wins        []*win
	idSeq       int
	stats       Stats
	hist        []string
	ops         map[string]*op // every command sent, by id
	opOrder     []string
	failures    []string // protocol errors: non-retryable answers
	start       time.Time
	pgRestarted bool
	failover    chan error // a failover in progress (failover.go)
	setupIDs    []string   // commands sent outside windows
}

type deviceInfo struct {
	token    string
	deviceID string
	clients  []*client.Client // one per endpoint
}

// op is one command in the client history (for the checkers and Porcupine).
type op struct {
	id       string
	page     string
	cmd      kbcore.Command
	call     int64 // ns since start of the first send
	ret      int64 // ns since start of the decision (0 = undecided)
	seq      int64
	rejected string
}

func (s *sim) logf(format string, args ...any) {
	line := fmt.Sprintf("%6.3fs ", time.Since(s.start).Seconds()) + fmt.Sprintf(format, args...)
	if s.opts.Trace {
		s.opts.Logf("seed %d: %s", s.seed, line)
	}
	s.hist = append(s.hist, line)
	if len(s.hist) > 400 {
		s.hist = s.hist[len(s.hist)-300:]
	}
}

func (s *sim) newID() string {
	s.idSeq++
	return uuid.NewSHA1(uuid.NameSpaceOID, []byte(fmt.Sprintf("%s:%d:%d", s.nonce, s.seed, s.idSeq))).String()
}

func (s *sim) chance(p float64) bool { return p > 0 && s.rng.Float64() < p }

// RunSeeds runs opts.Seeds seeds against target and returns their reports.
// An error means the run could not proceed at all.
func RunSeeds(ctx context.Context, target Target, opts Options) ([]SeedReport, error) {
	opts.defaults()
	reports := make([]SeedReport, opts.Seeds)
	next := make(chan int)
	results := make(chan int)
	var wg sync.WaitGroup
	for p := 0; p < min(opts.Parallel, opts.Seeds); p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				reports[i] = RunSeed(ctx, target, opts, opts.Seed+int64(i))
				results <- i
			}
		}()
	}
	go func() {
		defer close(next)
		for i := 0; i < opts.Seeds && ctx.Err() == nil; i++ {
			next <- i
		}
	}()
	go func() { wg.Wait(); close(results) }()
	done := 0
	for i := range results {
		done++
		if opts.Progress != nil {
			opts.Progress(done, opts.Seeds, reports[i])
		}
	}
	if ctx.Err() != nil {
		return reports[:done], ctx.Err()
	}
	sometimesRefetch(reports)
	return reports, nil
}

// sometimesRefetch fails a run in which echoes were dropped on several
// seeds but no window ever refetched (Antithesis' "sometimes"): the fault
// injection did not reach the gap path, so the run proved nothing about it.
func sometimesRefetch(reports []SeedReport) {
	var dropped, refetches, seeds int
	for _, r := range reports {
		dropped += r.Stats.Dropped
		refetches += r.Stats.Refetches
		if r.Stats.Dropped > 0 {
			seeds++
		}
	}
	if seeds < 3 || refetches > 0 {
		return
	}
	last := &reports[len(reports)-1]
	for i := range last.Checks {
		if last.Checks[i].Name == CheckRefetch {
			last.Checks[i].Passed = false
			last.Checks[i].Detail = fmt.Sprintf("%d echoes were dropped over %d seeds but no window ever refetched", dropped, seeds)
		}
	}
}

// RunSeed runs one seed.
func RunSeed(ctx context.Context, target Target, opts Options, seed int64) SeedReport {
	opts.defaults()
	nonce := make([]byte, 4)
	_, _ = rand.Read(nonce)
	s := &sim{
		ctx: ctx, opts: opts, seed: seed, target: target,
		rng:   mrand.New(mrand.NewPCG(uint64(seed), 0x6b626b6974)),
		nonce: hex.EncodeToString(nonce), known: map[string]int64{}, ops: map[string]*op{},
		start: time.Now(),
	}
	rep := SeedReport{Seed: seed}
	s.drawFaults()
	rep.Faults = s.faults.String()
	defer s.close()
	if err := s.setup(); err != nil {
		rep.Err = err.Error()
		rep.History = s.hist
		return rep
	}
	for i := 0; i < opts.Steps && ctx.Err() == nil; i++ {
		if err := s.step(i); err != nil {
			rep.Err = err.Error()
			rep.History = s.hist
			return rep
		}
	}
	if err := s.quiesce(); err != nil {
		rep.Err = err.Error()
		rep.History = s.hist
		rep.Stats = s.stats
		return rep
	}
	rep.Checks, rep.Visualization = s.check()
	rep.Stats = s.stats
	rep.Duration = time.Since(s.start)
	if rep.Failed() {
		rep.History = s.hist
	}
	return rep
}

func (s *sim) drawFaults() {
	if !s.opts.Faults {
		return
	}
	// Swarm testing: each seed enables a random subset of faults.
	pick := func(p float64) float64 {
		if s.rng.IntN(2) == 0 {
			return 0
		}
		return p
	}
	s.faults = Faults{
		Drop: pick(0.08), Duplicate: pick(0.08), Reorder: pick(0.05),
		Cut: pick(0.02), LoseResponse: pick(0.06),
	}
	if _, ok := s.target.(Restarter); ok {
		s.faults.RestartInstance = s.rng.IntN(3) == 0
	}
	if r, ok := s.target.(PostgresRestarter); ok && r.CanRestartPostgres() {
		s.faults.RestartPostgres = s.rng.IntN(10) == 0
	}
	if f, ok := s.target.(Failoverer); ok && f.CanFailover() {
		s.faults.Failover = true // every seed: not drawn, so other draws replay
	}
	if s.faults == (Faults{}) {
		s.faults.Drop = 0.08 // a faulty seed always has some fault
	}
}

func (s *sim) close() {
	for _, w := range s.wins {
		if w.sub != nil {
			w.sub.Close()
		}
	}
}

// ---- setup ----

func (s *sim) setup() error {
	tokens, err := s.target.Devices(s.ctx, s.opts.Devices)
	if err != nil {
		return err
	}
	eps := s.target.Endpoints()
	if len(eps) == 0 {
		return fmt.Errorf("%w: target has no endpoint", ErrCannotRun)
	}
	for _, tok := range tokens {
		d := deviceInfo{token: tok}
		for _, ep := range eps {
			d.clients = append(d.clients, client.New(ep, tok))
		}
		var me client.Device
		for attempt := 0; ; attempt++ {
			if me, err = d.clients[0].Whoami(s.ctx); err == nil || !client.IsRetryable(err) || attempt > 80 {
				break
			}
			s.pause(attempt)
		}
		if err != nil {
			return fmt.Errorf("%w: whoami: %v", ErrCannotRun, err)
		}
		d.deviceID = me.DeviceID
		s.devices = append(s.devices, d)
	}
	for k := 0; k < s.opts.Pages; k++ {
		page := s.newID()
		title := fmt.Sprintf("S%d-%s P%d", s.seed, s.nonce, k)
		s.pages = append(s.pages, page)
		s.titles = append(s.titles, title)
		s.merged = append(s.merged, false)
		if err := s.direct(0, page, kbcore.TypeCreatePage, map[string]any{"title": title}); err != nil {
			return err
		}
		for j := 0; j < 3; j++ {
			if err := s.direct(0, page, kbcore.TypeCreateAfter, map[string]any{"text": fmt.Sprintf("seed %d", j)}); err != nil {
				return err
			}
		}
	}
	for i := 0; i < s.opts.Windows; i++ {
		w := &win{idx: i, page: i % len(s.pages), dev: i % len(s.devices), acked: map[string]bool{}}
		w.c = s.devices[w.dev].clients[i%len(eps)]
		snap, err := s.retryPage(w.c, s.pages[w.page], nil)
		if err != nil {
			return fmt.Errorf("%w: open window %d: %v", ErrCannotRun, i, err)
		}
		w.w = kbcore.NewWindow(snap.Doc, snap.Seq)
		w.recv = snap.Seq
		s.wins = append(s.wins, w)
	}
	s.logf("setup: %d devices, %d pages, %d windows, faults: %s", len(s.devices), len(s.pages), len(s.wins), s.faults)
	return nil
}

// direct sends a setup command outside any window, retrying until decided.
func (s *sim) direct(dev int, page, typ string, payload any) error {
	b, _ := json.Marshal(payload)
	env := kbcore.Envelope{ID: s.newID(), DeviceID: s.devices[dev].deviceID, PageID: page, Type: typ, Payload: b}
	s.setupIDs = append(s.setupIDs, env.ID)
	for attempt := 0; ; attempt++ {
		seq, rej, err := s.devices[dev].clients[0].Command(s.ctx, env)
		switch {
		case err == nil && rej == nil:
			if seq > s.known[page] {
				s.known[page] = seq
			}
			return nil
		case err == nil:
			return fmt.Errorf("%w: setup %s rejected: %s", ErrCannotRun, typ, rej.Message)
		case !client.IsRetryable(err) || attempt > 50:
			return fmt.Errorf("%w: setup %s: %v", ErrCannotRun, typ, err)
		}
		s.pause(attempt)
	}
}

func (s *sim) pause(attempt int) {
	d := time.Duration(min(attempt+1, 20)) * 25 * time.Millisecond
	select {
	case <-time.After(d):
	case <-s.ctx.Done():
	}
}

func (s *sim) retryPage(c *client.Client, page string, pending []string) (client.Snapshot, error) {
	for attempt := 0; ; attempt++ {
		snap, err := c.Page(s.ctx, page, pending)
		if err == nil || !client.IsRetryable(err) || attempt > 80 || s.ctx.Err() != nil {
			return snap, err
		}
		if attempt%10 == 0 {
			s.logf("kb.page %s: retrying: %v", shortID(page), err)
		}
		s.stats.Retries++
		s.pause(attempt)
	}
}

// ---- the scheduler ----

func (s *sim) step(i int) error {
	if s.faults.Failover && i == s.opts.Steps/2 {
		s.startFailover()
	}
	w := s.wins[s.rng.IntN(len(s.wins))]
	switch r := s.rng.IntN(100); {
	case r < 40:
		s.local(w)
	case r < 65:
		if s.opts.Bursts && s.rng.IntN(3) == 0 {
			return s.burst()
		}
		return s.send(w)
	case r < 90:
		return s.deliver(w, false)
	case r < 94:
		s.undoRedo(w)
	case r < 96:
		return s.pageOp(w)
	default:
		return s.fault(i)
	}
	return nil
}

func (s *sim) handle(w *win, acts []kbcore.Action) error {
	for _, a := range acts {
		switch a.Kind {
		case kbcore.ActionToast:
			s.logf("w%d toast %s", w.idx, a.Code)
		case kbcore.ActionRefetch:
			s.stats.Refetches++
			w.gapped = false
			if err := s.refetch(w); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *sim) refetch(w *win) error {
	var ids []string
	for _, c := range w.w.Pending() {
		ids = append(ids, c.ID)
	}
	snap, err := s.retryPage(w.c, s.pages[w.page], ids)
	if err != nil {
		s.failures = append(s.failures, fmt.Sprintf("w%d kb.page: %v", w.idx, err))
		return nil
	}
	s.logf("w%d refetch -> seq %d (%d outcomes)", w.idx, snap.Seq, len(snap.Outcomes))
	for id, o := range snap.Outcomes {
		s.decide(id, o.Seq, o.Rejected)
	}
	if snap.Seq > s.known[s.pages[w.page]] {
		s.known[s.pages[w.page]] = snap.Seq
	}
	return s.handle(w, w.w.Snapshot(snap.Doc, snap.Seq, snap.Outcomes))
}

// decide records the server's verdict on an id.
func (s *sim) decide(id string, seq int64, rej *kbcore.Rejection) {
	o := s.ops[id]
	if o == nil || o.ret != 0 {
		return
	}
	o.ret = time.Since(s.start).Nanoseconds()
	if rej != nil {
		o.rejected = rej.Code
		s.stats.Rejected++
	} else {
		o.seq = seq
		s.stats.Committed++
	}
}

// local makes the user of window w do something.
func (s *sim) local(w *win) {
	c := s.drawCommand(w)
	acts := w.w.Local(c)
	if len(acts) > 0 && acts[0].Kind == kbcore.ActionToast {
		s.stats.LocalToast++
	}
	s.logf("w%d local %s %s -> %v", w.idx, c.Type, c.Payload, acts)
	_ = s.handle(w, acts)
}

func (s *sim) undoRedo(w *win) {
	ids := []string{s.newID(), s.newID(), s.newID(), s.newID()}
	var acts []kbcore.Action
	if s.rng.IntN(3) == 0 {
		acts = w.w.Redo(ids)
		s.logf("w%d redo -> %v", w.idx, acts)
	} else {
		acts = w.w.Undo(ids)
		s.logf("w%d undo -> %v", w.idx, acts)
	}
	_ = s.handle(w, acts)
}

// pageOp renames the window's page, or (rarely) merges it into another.
func (s *sim) pageOp(w *win) error {
	if s.merged[w.page] {
		return nil
	}
	var c kbcore.Command
	if s.rng.IntN(5) == 0 && len(s.pages) > 1 {
		into := (w.page + 1 + s.rng.IntN(len(s.pages)-1)) % len(s.pages)
		if s.merged[into] {
			return nil
		}
		c = kbcore.Command{ID: s.newID(), Type: kbcore.TypeMergePage, Payload: mustJSON(map[string]any{"into": s.pages[into]})}
	} else {
		title := fmt.Sprintf("S%d-%s P%d r%d", s.seed, s.nonce, w.page, s.idSeq)
		c = kbcore.Command{ID: s.newID(), Type: kbcore.TypeRenamePage, Payload: mustJSON(map[string]any{"title": title})}
	}
	acts := w.w.Local(c)
	s.logf("w%d local %s %s -> %v", w.idx, c.Type, c.Payload, acts)
	return s.handle(w, acts)
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

func (s *sim) firstUnacked(w *win) *kbcore.Command {
	for _, p := range w.w.Pending() {
		if !w.acked[p.ID] {
			return &p
		}
	}
	return nil
}

func (s *sim) fault(step int) error {
	if !s.opts.Faults {
		return nil
	}
	switch {
	case s.faults.RestartPostgres && step >= s.opts.Steps/2 && !s.pgRestarted:
		s.pgRestarted = true
		if r, ok := s.target.(PostgresRestarter); ok {
			s.logf("restarting Postgres (fault)")
			s.stats.Restarts++
			if err := r.RestartPostgres(s.ctx); err != nil {
				return fmt.Errorf("%w: restart Postgres: %v", ErrCannotRun, err)
			}
		}
	case s.faults.RestartInstance && s.rng.IntN(4) == 0:
		if r, ok := s.target.(Restarter); ok {
			i := s.rng.IntN(len(s.target.Endpoints()))
			s.logf("restarting instance %d (fault)", i)
			s.stats.Restarts++
			if err := r.RestartInstance(s.ctx, i); err != nil {
				return fmt.Errorf("%w: restart instance: %v", ErrCannotRun, err)
			}
		}
	case s.chance(s.faults.Cut * 20):
		w := s.wins[s.rng.IntN(len(s.wins))]
		if w.sub != nil {
			s.stats.Cuts++
			s.logf("w%d socket cut (fault)", w.idx)
			w.sub.Close()
			w.sub, w.inbox = nil, nil
			w.recv = w.w.Seq()
		}
	}
	return nil
}

// ---- quiesce ----

// quiesce sends every pending command until decided and delivers every echo,
// without faults, until every window is at its page's head.
func (s *sim) quiesce() error {
	if err := s.awaitFailover(); err != nil {
		return err
	}
	s.logf("quiesce")
	for round := 0; round < 200; round++ {
		busy := false
		for _, w := range s.wins {
			for tries := 0; tries < 200; {
				c := s.firstUnacked(w)
				if c == nil {
					break
				}
				if err := s.send(w); err != nil {
					return err
				}
				if c2 := s.firstUnacked(w); c2 != nil && c2.ID == c.ID {
					s.pause(tries) // not decided yet (retryable): back off
					tries++
				}
			}
		}
		s.refreshHeads(s.wins[0].c)
		for _, w := range s.wins {
			page := s.pages[w.page]
			for w.w.Seq() < s.known[page] {
				busy = true
				if max(w.recv, w.w.Seq()) >= s.known[page] && len(w.inbox) == 0 {
					// Everything was received but something was dropped on
					// the way: the window must notice the gap itself.
					if !w.w.Awaiting() {
						s.logf("w%d stalled at seq %d: resubscribing", w.idx, w.w.Seq())
						if w.sub != nil {
							w.sub.Close()
						}
						w.sub, w.inbox, w.recv = nil, nil, w.w.Seq()
						continue
					}
					if err := s.refetch(w); err != nil {
						return err
					}
					continue
				}
				before := w.w.Seq()
				if err := s.deliver(w, true); err != nil {
					return err
				}
				if w.w.Seq() == before && w.w.Awaiting() {
					if err := s.refetch(w); err != nil {
						return err
					}
				}
			}
			if len(w.w.Pending()) > 0 {
				busy = true
			}
		}
		if !busy {
			return nil
		}
	}
	var stuck []string
	for _, w := range s.wins {
		if n := len(w.w.Pending()); n > 0 || w.w.Seq() < s.known[s.pages[w.page]] {
			stuck = append(stuck, fmt.Sprintf("w%d: seq %d/%d, %d pending", w.idx, w.w.Seq(), s.known[s.pages[w.page]], n))
		}
	}
	s.failures = append(s.failures, "quiesce did not settle: "+strings.Join(stuck, "; "))
	return nil
}
