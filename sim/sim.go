package sim

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/subspace/kbkit/target"

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
	// subAfter is the lastEventId the subscription was opened with,
	// subLast the last seq it delivered (checks_wire.go).
	subAfter, subLast int64
	// stuck: the window made no progress within the echo timeout in
	// quiesce (a finding); quiesce no longer waits for it.
	stuck bool
}

type sim struct {
	ctx          context.Context
	opts         Options
	seed         int64
	rng          *chooser // every random decision (choices.go)
	faults       Faults
	target       Target
	nonce        string
	devices      []deviceInfo
	pages        []string // page ids of this seed
	titles       []string // current titles
	merged       []bool
	probed       bool             // settleForeign's echo probe ran (echoprobe.go)
	intentsGiven map[string]int   // page operations given to foreign windows, by type (foreign_page.go)
	known        map[string]int64 // lower bound of each page's head seq
	wins         []*win
	idSeq        int
	stats        Stats
	hist         []string
	ops          map[string]*op // every command sent, by id
	opOrder      []string
	failures     []string // protocol errors: non-retryable answers
	start        time.Time
	pgRestarted  bool
	setupIDs     []string            // commands sent outside windows
	found        map[string][]string // checker -> findings made while running
	exercised    map[string]int      // checker -> things it checked
	types        map[string]int      // commands sent, by type
	halt         string              // why the run should start no further seed
	forceLose    string              // lose the answer to this command id (race)
	skipped      map[string]string   // checker -> why it had nothing to check
	failover     chan error          // a failover in progress (failover.go)
	rec          *recorder           // the seed's timeline (record.go; nil: none)
	foreign      []*foreignWin       // windows of client adapters (foreign.go)
	steps        int                 // scheduler steps run
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
	posts    int     // kb.command calls made for it
	win      int     // the window that sent it
	srv      verdict // the server's verdict, once known (checks_wire.go)
	// refusedAt is posts when the kit's proxy first refused the command
	// (400, armRefuse: never forwarded, rejected "refused" for the
	// client); 0 if it was not.
	refusedAt int
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

func (s *sim) chance(p float64) bool { return s.rng.Chance(p) }

// RunSeeds runs opts.Seeds seeds against target and returns the reports of
// the seeds that ran. An error means the run could not proceed at all.
//
// Each client adapter (opts.Clients) is started once first
// (PreflightClients): one that cannot start ends the run before anything
// is made on the server, and so does one that fails to start in a seed
// (its report's ClientStart).
//
// A seed that hits its deadline or waits out an echo timeout (its report's
// Halt) stops the run: no further seed starts, and the seeds running end
// by their own deadlines, so a run against a server that stops answering
// or echoing ends within 2 x SeedTimeout.
func RunSeeds(ctx context.Context, target Target, opts Options) ([]SeedReport, error) {
	opts.defaults()
	if err := PreflightClients(ctx, opts); err != nil {
		return nil, err
	}
	if err := Preflight(ctx, target); err != nil {
		return nil, err
	}
	reports := make([]SeedReport, opts.Seeds)
	ran := make([]bool, opts.Seeds)
	next := make(chan int)
	results := make(chan int)
	halted := make(chan struct{})
	var haltOnce sync.Once
	var wg sync.WaitGroup
	for p := 0; p < min(opts.Parallel, opts.Seeds); p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				reports[i] = RunSeed(ctx, target, opts, opts.Seed+int64(i))
				if reports[i].Halt != "" || reports[i].ClientStart {
					haltOnce.Do(func() { close(halted) })
				}
				results <- i
			}
		}()
	}
	go func() {
		defer close(next)
		for i := 0; i < opts.Seeds && ctx.Err() == nil; i++ {
			select {
			case next <- i:
			case <-halted:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()
	done := 0
	for i := range results {
		done++
		ran[i] = true
		if opts.Progress != nil {
			opts.Progress(done, opts.Seeds, reports[i])
		}
	}
	out := reports[:0]
	for i := range reports {
		if ran[i] {
			out = append(out, reports[i])
		}
	}
	if ctx.Err() != nil {
		return out, ctx.Err()
	}
	sometimesRefetch(out)
	return out, nil
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

// RunSeed runs one seed, within opts.SeedTimeout.
func RunSeed(ctx context.Context, target Target, opts Options, seed int64) SeedReport {
	opts.defaults()
	nonce := make([]byte, 4)
	_, _ = rand.Read(nonce)
	sctx, cancel := context.WithTimeout(ctx, opts.SeedTimeout)
	defer cancel()
	s := &sim{
		ctx: sctx, opts: opts, seed: seed, target: target,
		rng:   newChooser(seed, opts.Choices),
		nonce: hex.EncodeToString(nonce), known: map[string]int64{}, ops: map[string]*op{},
		start: time.Now(), found: map[string][]string{}, exercised: map[string]int{}, types: map[string]int{},
		intentsGiven: map[string]int{},
	}
	rep := SeedReport{Seed: seed}
	s.drawFaults()
	rep.Faults = s.faults.String()
	defer s.close()
	finish := func(phase string, err error) SeedReport {
		s.conclude(&rep)
		rep.History = s.hist
		if ctx.Err() == nil && sctx.Err() != nil {
			// The seed's own deadline, not the caller's: the server did
			// not let it finish. A protocol finding, and the run halts.
			rep.Halt = fmt.Sprintf("seed %d did not finish within %s (in %s)", seed, opts.SeedTimeout, phase)
			rep.Checks = s.timedOut(rep.Halt)
			s.writeTimeline(&rep)
			return rep
		}
		rep.Err = err.Error()
		s.writeTimeline(&rep)
		return rep
	}
	if err := s.setup(); err != nil {
		return finish("setup", err)
	}
	if err := s.openForeign(); err != nil {
		rep.ClientStart = true
		return finish("setup", err)
	}
	for i := 0; i < opts.Steps; i++ {
		if sctx.Err() != nil {
			return finish("the scheduler's steps", sctx.Err())
		}
		if s.halt != "" {
			// The server let an echo time out: further steps would wait as
			// long; quiesce and check what there is.
			s.logf("steps stopped at %d of %d: %s", i, opts.Steps, s.halt)
			break
		}
		s.steps++
		s.rng.mark()
		if err := s.step(i); err != nil {
			return finish("the scheduler's steps", err)
		}
	}
	if err := s.quiesceAll(); err != nil || sctx.Err() != nil {
		return finish("quiesce", cmp.Or(err, sctx.Err()))
	}
	rep.Checks, rep.Visualization = s.check()
	if sctx.Err() != nil {
		// The seed's deadline (a finding) or the caller's cancellation
		// (the seed could not run) cut the checks short.
		return finish("the checks", sctx.Err())
	}
	s.conclude(&rep)
	rep.Halt = s.halt
	if rep.Failed() {
		rep.History = s.hist
	}
	s.writeTimeline(&rep)
	return rep
}

// conclude puts what the seed did into its report.
func (s *sim) conclude(rep *SeedReport) {
	rep.Stats, rep.Types, rep.Duration = s.stats, s.types, time.Since(s.start)
	rep.Faults = s.faults.String() + s.stats.counted()
	rep.Clients = s.foreignCoverage()
	rep.Replay = ReplayCommand(s.opts, s.seed)
	rep.Choices, rep.StepStarts = s.rng.Choices(), append([]int(nil), s.rng.marks...)
	st := s.stats
	rep.Shape = Shape{Steps: s.steps, Windows: len(s.wins), Pages: len(s.pages), Devices: len(s.devices),
		Faults:   st.Dropped + st.Duplicated + st.Reordered + st.Cuts + st.LostResp + st.Restarts + st.Failovers,
		Commands: st.Commands, Choices: len(rep.Choices)}
}

// timedOut is the verdict on a seed that hit its deadline: a protocol
// failure (with the findings made so far); the other checkers did not run.
func (s *sim) timedOut(why string) []CheckResult {
	problems := append([]string{why}, s.failures...)
	out := []CheckResult{{Name: CheckProtocol, Detail: strings.Join(problems, "\n")}}
	for _, name := range Checkers[1:] {
		out = append(out, CheckResult{Name: name, Passed: true, Skipped: true, Detail: "not run: the seed did not finish"})
	}
	return out
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
		s.faults.RestartInstance = s.rng.OneIn(3)
	}
	if r, ok := s.target.(PostgresRestarter); ok && r.CanRestartPostgres() {
		s.faults.RestartPostgres = s.rng.OneIn(10)
	}
	if f, ok := s.target.(Failoverer); ok && f.CanFailover() {
		s.faults.Failover = true // every seed: not drawn, so other draws replay
	}
	if s.faults == (Faults{}) {
		s.faults.Drop = 0.08 // a faulty seed always has some fault
	}
}

func (s *sim) close() {
	s.closeForeign()
	for _, w := range s.wins {
		if w.sub != nil {
			w.sub.Close()
		}
	}
}

// ---- the scheduler ----

func (s *sim) step(i int) error {
	if s.faults.Failover && i == s.opts.Steps/2 {
		s.startFailover()
	}
	if len(s.foreign) > 0 {
		// Only with client adapters: a run without them draws as before.
		if k := s.rng.IntN(len(s.wins) + len(s.foreign)); k >= len(s.wins) {
			return s.stepForeign(s.foreign[k-len(s.wins)])
		}
	}
	w := s.wins[s.rng.IntN(len(s.wins))]
	switch r := s.rng.IntN(100); {
	case r < 37:
		s.local(w)
	case r < 61:
		if s.opts.Bursts && s.rng.OneIn(3) {
			return s.burst()
		}
		return s.send(w)
	case r < 86:
		return s.deliver(w, false)
	case r < 90:
		s.undoRedo(w)
	case r < 94:
		return s.pageOp(w)
	case r < 96:
		return s.race(w)
	default:
		return s.fault(i)
	}
	return nil
}

func (s *sim) handle(w *win, acts []kbcore.Action) error {
	for _, a := range acts {
		s.rec.action(w, a)
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
	want := s.expectOutcomes(ids)
	t0 := s.now()
	floor := s.known[s.pages[w.page]]
	snap, err := s.retryPage(w.c, s.pages[w.page], ids)
	s.rec.refetch(w, t0, ids, snap, err)
	if err != nil {
		if s.ctx.Err() != nil {
			return s.ctx.Err()
		}
		s.failures = append(s.failures, fmt.Sprintf("w%d kb.page: %v", w.idx, err))
		return nil
	}
	s.logf("w%d refetch -> seq %d (%d outcomes)", w.idx, snap.Seq, len(snap.Outcomes))
	s.checkOutcomes(w, want, snap)
	s.checkRecency(fmt.Sprintf("w%d refetch:", w.idx), s.pages[w.page], floor, snap.Seq)
	if d := canonicalDoc(snap.RawDoc, snap.Doc); d != "" {
		s.find(CheckProjection, "w%d refetch of page %s: kb.page's doc is not in canonical JSON:%s", w.idx, shortID(s.pages[w.page]), d)
	}
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
	s.rec.decided(id, seq, rej)
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
	if s.rng.OneIn(3) {
		acts = w.w.Redo(ids)
		s.logf("w%d redo -> %v", w.idx, acts)
		s.rec.undo(w, "redo", acts)
	} else {
		acts = w.w.Undo(ids)
		s.logf("w%d undo -> %v", w.idx, acts)
		s.rec.undo(w, "undo", acts)
	}
	_ = s.handle(w, acts)
}

// pageOp renames the window's page, sets its aliases, merges it into
// another (and sometimes regrets it at once: undo issues restore-page), or
// creates a new page (no window edits it; links may resolve to it).
func (s *sim) pageOp(w *win) error {
	if s.merged[w.page] {
		return nil
	}
	var c kbcore.Command
	regret := false
	switch k := s.rng.IntN(10); {
	case k < 4:
		title := fmt.Sprintf("S%d-%s P%d r%d", s.seed, s.nonce, w.page, s.idSeq)
		c = kbcore.Command{ID: s.newID(), Type: kbcore.TypeRenamePage, Payload: mustJSON(map[string]any{"title": title})}
	case k < 6:
		aliases := []string{}
		for n := s.rng.IntN(3); n > 0; n-- {
			aliases = append(aliases, fmt.Sprintf("S%d-%s P%d a%d", s.seed, s.nonce, w.page, s.idSeq+n))
		}
		c = kbcore.Command{ID: s.newID(), Type: kbcore.TypeSetAliases, Payload: mustJSON(map[string]any{"aliases": aliases})}
	case k < 8 && len(s.pages) > 1:
		into := (w.page + 1 + s.rng.IntN(len(s.pages)-1)) % len(s.pages)
		if s.merged[into] {
			return nil
		}
		regret = s.rng.OneIn(2)
		c = kbcore.Command{ID: s.newID(), Type: kbcore.TypeMergePage, Payload: mustJSON(map[string]any{"into": s.pages[into]})}
	default:
		if len(s.pages) >= s.opts.Pages+2 {
			return nil
		}
		return s.newPage()
	}
	acts := w.w.Local(c)
	s.logf("w%d local %s %s -> %v", w.idx, c.Type, c.Payload, acts)
	if err := s.handle(w, acts); err != nil {
		return err
	}
	if regret {
		s.undoRedo(w)
	}
	return nil
}

// newPage creates a page outside any window (create-page over the wire).
func (s *sim) newPage() error {
	page := s.newID()
	title := fmt.Sprintf("S%d-%s P%d", s.seed, s.nonce, len(s.pages))
	if err := s.direct(0, page, kbcore.TypeCreatePage, map[string]any{"title": title}); err != nil {
		return err
	}
	s.pages = append(s.pages, page)
	s.titles = append(s.titles, title)
	s.merged = append(s.merged, false)
	s.logf("created page %s %q", shortID(page), title)
	return nil
}

// race makes the server reject a window's command and (with faults) lose
// the answer: window a deletes a node and its delete is decided; window b
// on the same page, which has not seen that echo, edits the node. With
// faults the rejection's answer is lost and b refetches (the outcomes must
// report the rejection) or, a third of the time, sends the edit again
// (the retry must be answered with the rejection).
func (s *sim) race(a *win) error {
	var b *win
	for _, w := range s.wins {
		if w != a && w.page == a.page {
			b = w
			break
		}
	}
	if b == nil || s.merged[a.page] {
		return nil
	}
	var target string
	b.w.Rendered().Walk(func(n kbcore.Node) bool {
		if _, ok := a.w.Rendered().Node(n.ID); ok {
			target = n.ID
			return false
		}
		return true
	})
	if target == "" {
		return nil
	}
	del := kbcore.Command{ID: s.newID(), Type: kbcore.TypeDelete, Payload: mustJSON(map[string]any{"node": target})}
	s.logf("w%d race: delete %s, then w%d edits it", a.idx, target, b.idx)
	if err := s.handle(a, a.w.Local(del)); err != nil {
		return err
	}
	if err := s.flush(a, del.ID); err != nil {
		return err
	}
	text := "raced"
	if n, ok := b.w.Rendered().Node(target); ok {
		text = n.Text + "!"
	}
	edit := kbcore.Command{ID: s.newID(), Type: kbcore.TypeEditText, Payload: mustJSON(map[string]any{"node": target, "text": text})}
	if err := s.handle(b, b.w.Local(edit)); err != nil {
		return err
	}
	if s.opts.Faults {
		s.forceLose = edit.ID
	}
	return s.flush(b, edit.ID)
}

// flush sends w's commands up to and including id, once each (a retryable
// answer leaves the rest for later steps).
func (s *sim) flush(w *win, id string) error {
	for range len(w.w.Pending()) {
		c := s.firstUnacked(w)
		if c == nil {
			return nil
		}
		if err := s.send(w); err != nil {
			return err
		}
		if c.ID == id {
			return nil
		}
	}
	return nil
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
			s.rec.fault(nil, "Postgres restarted (fault)")
			s.stats.Restarts++
			if err := r.RestartPostgres(s.ctx); err != nil {
				return fmt.Errorf("%w: restart Postgres: %v", target.ErrCannotRun, err)
			}
		}
	case s.faults.RestartInstance && s.rng.OneIn(4):
		if r, ok := s.target.(Restarter); ok {
			i := s.rng.IntN(len(s.target.Endpoints()))
			s.logf("restarting instance %d (fault)", i)
			s.rec.restart(i)
			s.stats.Restarts++
			if err := r.RestartInstance(s.ctx, i); err != nil {
				return fmt.Errorf("%w: restart instance: %v", target.ErrCannotRun, err)
			}
		}
	case len(s.wins) > 0 && s.chance(s.faults.Cut*20):
		w := s.wins[s.rng.IntN(len(s.wins))]
		if w.sub != nil {
			s.stats.Cuts++
			s.logf("w%d socket cut (fault)", w.idx)
			s.rec.fault(w, "socket cut (fault)")
			w.sub.Close()
			w.sub, w.inbox = nil, nil
			w.recv = w.w.Seq()
		}
	}
	return nil
}
