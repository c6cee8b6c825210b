package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/subspace/kbkit/target"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/speckit/adapter"
)

// A foreign window is a window of another team's client, driven through
// the client suite of the adapter protocol (spec/ADAPTER.md section 7):
// the client does its own networking, to a fault proxy (clientproxy.go)
// in front of the server; the scheduler only tells it what the user does
// and asks what it shows. What the client sent, and what it was answered
// and delivered, is what the proxy saw; every checker runs on the history
// merged with the reference windows'.

// foreignWin is one window of a client adapter.
type foreignWin struct {
	idx     int    // window number, after the reference windows
	line    string // the client's command line, as given
	page    int
	dev     int
	ad      *adapter.Client
	proxy   *clientProxy
	refused bool // the kit refused one of its posts (adversary.go)
	intents map[string]bool
	state   adapter.ClientState
	doc     kbcore.Doc // the last rendered document
	openSeq int64
	dead    string // why the client no longer answers (a finding)

	given    map[string]kbcore.Command // command id -> the command an intent asked for
	undoIDs  map[string]bool           // ids given to undo and redo
	accepted map[string]bool           // ids the client showed pending
	toasts   []adapter.Toast
	servers  []seqDoc // server documents reported, with their seqs (the last few)

	covered  int64          // every seq up to this was delivered or in a snapshot
	ahead    map[int64]bool // seqs past covered delivered already
	answered map[string]int // decided answers per command id (delivered or lost)
	gapAt    int64          // an event past a hole was delivered
	gapHole  int64          // the first seq of that hole
	gapOpen  bool
	pages    int // kb.page calls for its page
	subs     int
	coverage ClientCoverage
	rules    clientRules // replies and records for the client rules (foreign_rules.go)
}

type seqDoc struct {
	seq int64
	doc kbcore.Doc
}

// ClientCoverage is what one foreign window was given and saw in a seed.
type ClientCoverage struct {
	Client  string         `json:"client"`  // the command line
	Window  int            `json:"window"`  // the window's number
	Intents map[string]int `json:"intents"` // intents performed, by name
	Faults  map[string]int `json:"faults"`  // faults its sockets saw, by kind
}

func (fw *foreignWin) name() string { return fmt.Sprintf("w%d (%s)", fw.idx, fw.line) }

// openForeign starts one adapter per Options.Clients entry and opens its
// window on a page of the seed, behind its own fault proxy. The adapters
// start and open at once, each in its own process.
func (s *sim) openForeign() error {
	eps := s.target.Endpoints()
	for k, line := range s.opts.Clients {
		fw := &foreignWin{idx: len(s.wins) + k, line: line, page: k % len(s.pages), dev: (len(s.wins) + k) % len(s.devices),
			ahead: map[int64]bool{}, answered: map[string]int{},
			given: map[string]kbcore.Command{}, undoIDs: map[string]bool{}, accepted: map[string]bool{}, intents: map[string]bool{},
			coverage: ClientCoverage{Client: line, Intents: map[string]int{}, Faults: map[string]int{}}}
		fw.coverage.Window = fw.idx
		s.foreign = append(s.foreign, fw)
		var faults Faults
		if s.opts.Faults {
			faults = s.faults
		}
		if s.opts.ClientFaults != nil {
			faults = *s.opts.ClientFaults
		}
		fw.proxy = newClientProxy(s.target, fw.idx%len(eps), s.start, s.seed, k, faults)
	}
	res := make([]opened, len(s.foreign))
	var wg sync.WaitGroup
	for k, fw := range s.foreign {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[k] = s.startForeign(fw)
		}()
	}
	wg.Wait()
	for k, fw := range s.foreign {
		if err := res[k].startErr; err != nil {
			return fmt.Errorf("%w: --client %q: %v", target.ErrCannotRun, fw.line, err)
		}
	}
	for k, fw := range s.foreign {
		if err := res[k].openErr; err != nil {
			s.rec.foreignLane(fw)
			s.clientDied(fw, "open", err)
			continue
		}
		fw.openSeq = res[k].st.Seq
		s.observe(fw, res[k].st)
		s.rec.foreignLane(fw)
		s.logf("%s opened on page P%d at seq %d", fw.name(), fw.page, fw.openSeq)
	}
	s.drainForeign()
	return nil
}

// opened is how a foreign window's start went.
type opened struct {
	st       adapter.ClientState
	startErr error // the adapter could not start: the run cannot go on
	openErr  error // open failed: a finding on the client
}

// startForeign starts fw's adapter, checks its init_ok and opens its
// window. It touches only fw (it runs beside the others).
func (s *sim) startForeign(fw *foreignWin) opened {
	ad, intents, err := startClient(s.ctx, fw.line, s.opts, fmt.Sprintf("[client w%d seed %d] ", fw.idx, s.seed))
	if err != nil {
		return opened{startErr: err}
	}
	fw.ad = ad
	for _, in := range intents {
		fw.intents[in] = true
	}
	st, err := fw.ad.Open(s.ctx, adapter.OpenRequest{Window: fmt.Sprintf("w%d", fw.idx), URL: fw.proxy.URL(),
		Token: s.devices[fw.dev].token, DeviceID: s.devices[fw.dev].deviceID, PageID: s.pages[fw.page],
		TimeoutMS: s.clientTimeout().Milliseconds()})
	return opened{st: st, openErr: err}
}

// startClient starts the client adapter of command line line and checks
// its init_ok: it lists the client suite and at least one intent, all
// known. The adapter then answers within the client timeout.
func startClient(ctx context.Context, line string, opts Options, prefix string) (*adapter.Client, []string, error) {
	argv, err := adapter.SplitCommand(line)
	if err != nil || len(argv) == 0 {
		return nil, nil, cmp.Or(err, errors.New("an empty command line"))
	}
	var stderr io.Writer = os.Stderr
	if opts.ClientStderr != nil {
		stderr = opts.ClientStderr
	}
	// Starting (init) may take a while on a loaded machine; every
	// request after it is held to the client timeout.
	ad, err := adapter.Start(ctx, argv, adapter.Options{Timeout: max(clientTimeout(opts), 30*time.Second), Stderr: stderr,
		StderrPrefix: prefix, MaxFailures: 1})
	if err != nil {
		return nil, nil, err
	}
	ad.SetTimeout(clientTimeout(opts))
	info := ad.Info()
	fail := func(err error) (*adapter.Client, []string, error) {
		_ = ad.Close()
		return nil, nil, err
	}
	if !info.Supports(adapter.SuiteClient) {
		return fail(fmt.Errorf("init_ok does not list suite %q", adapter.SuiteClient))
	}
	if info.Protocol < adapter.ProtocolClient {
		return fail(fmt.Errorf("the client suite needs adapter protocol %d; the adapter took protocol %d (spec/ADAPTER.md section 3, init)", adapter.ProtocolClient, info.Protocol))
	}
	for _, in := range info.Intents {
		if !slices.Contains(adapter.Intents, in) {
			return fail(fmt.Errorf("init_ok lists intent %q, which is none of %s (spec/ADAPTER.md section 7)", in, strings.Join(adapter.Intents, ", ")))
		}
	}
	if len(info.Intents) == 0 {
		return fail(errors.New("init_ok lists no intents (spec/ADAPTER.md section 7)"))
	}
	return ad, info.Intents, nil
}

// PreflightClients starts each of opts.Clients once, checks its init_ok
// and ends it, before any seed creates anything on the server: a client
// that cannot start, dies or does not answer during init, or declares
// nothing it can do, stops the run at once (target.ErrCannotRun) with
// what the adapter wrote first on stderr.
func PreflightClients(ctx context.Context, opts Options) error {
	opts.defaults()
	errs := make([]error, len(opts.Clients))
	var wg sync.WaitGroup
	for k, line := range opts.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ad, _, err := startClient(ctx, line, opts, fmt.Sprintf("[client %d preflight] ", k+1))
			if err != nil {
				errs[k] = fmt.Errorf("%w: --client %q: %v", target.ErrCannotRun, line, err)
				return
			}
			_ = ad.Close()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// clientTimeout bounds one adapter request (Options.ClientTimeout).
func (s *sim) clientTimeout() time.Duration { return clientTimeout(s.opts) }

func clientTimeout(opts Options) time.Duration {
	if opts.ClientTimeout > 0 {
		return opts.ClientTimeout
	}
	return min(opts.EchoTimeout, 10*time.Second)
}

func (s *sim) clientDied(fw *foreignWin, what string, err error) {
	if fw.dead != "" {
		return
	}
	if s.ctx.Err() != nil {
		fw.dead = "the seed ended"
		return
	}
	fw.dead = fmt.Sprintf("%s: %v", what, err)
	var re *adapter.RemoteError
	if errors.As(err, &re) {
		// An error reply (e.g. to open, when the client could not get
		// the page in time: spec/ADAPTER.md section 7).
		s.failures = append(s.failures, fmt.Sprintf("%s answered %s with an error (%s); the window is given up", fw.name(), what, re.Text))
	} else {
		s.failures = append(s.failures, fmt.Sprintf("%s stopped answering the adapter protocol (%s); the window is given up", fw.name(), fw.dead))
	}
	s.logf("%s died: %s", fw.name(), fw.dead)
	_ = fw.ad.Close() // kills it
}

func (s *sim) closeForeign() {
	for _, fw := range s.foreign {
		if fw.ad != nil {
			if fw.dead == "" {
				ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), time.Second)
				_ = fw.ad.CloseWindow(ctx, fmt.Sprintf("w%d", fw.idx))
				cancel()
			}
			_ = fw.ad.Close()
		}
		if fw.proxy != nil {
			fw.proxy.Close()
		}
	}
}

// observe takes in a state the client reported.
func (s *sim) observe(fw *foreignWin, st adapter.ClientState) {
	fw.state = st
	d, err := kbcore.ParseDoc(st.Rendered)
	if err != nil {
		s.find(CheckConvergence, "%s reports a rendered document that is not a document: %v", fw.name(), err)
	} else {
		fw.doc = d
	}
	fw.rules.reply(s.now(), st, d, err == nil)
	for _, id := range st.Pending {
		fw.accepted[id] = true
	}
	fw.toasts = append(fw.toasts, st.Toasts...)
	for _, t := range st.Toasts {
		s.logf("%s toast %s %s", fw.name(), t.Code, shortID(t.ID))
	}
	if len(st.Server) == 0 || string(st.Server) == "null" {
		return
	}
	server, err := kbcore.ParseDoc(st.Server)
	if err != nil {
		s.find(CheckConvergence, "%s reports a server document that is not a document: %v", fw.name(), err)
		return
	}
	if n := len(fw.servers); n == 0 || fw.servers[n-1].seq != st.Seq {
		fw.servers = append(fw.servers, seqDoc{st.Seq, server})
		if len(fw.servers) > 64 {
			fw.servers = fw.servers[len(fw.servers)-48:]
		}
	}
	// rendered = fold(server, pending) (spec/window.md, State), when
	// every pending command is one the kit gave.
	rendered := server
	for _, id := range st.Pending {
		c, ok := fw.given[id]
		if !ok {
			return
		}
		if r := kbcore.Apply(rendered, c); r.Rejected == nil {
			rendered = r.Doc
		}
	}
	if err == nil && !rendered.Equal(fw.doc) {
		s.find(CheckConvergence, "%s at seq %d renders a document that is not its server document with its %d pending commands applied (spec/window.md: rendered = fold(server, pending)):\n%s",
			fw.name(), st.Seq, len(st.Pending), docDiff(rendered, fw.doc))
	}
}

// stepForeign is one scheduler step of a foreign window: an intent of
// its user, a look at its state, or (with faults) its sockets cut.
func (s *sim) stepForeign(fw *foreignWin) error {
	s.drainForeign()
	if fw.dead != "" {
		return nil
	}
	fw.proxy.unblock() // an instance the kit "restarted" is back
	switch r := s.rng.IntN(100); {
	case r < 4 && s.opts.Faults:
		s.logf("%s sockets cut (fault)", fw.name())
		fw.proxy.cut()
	case r < 25:
		st, err := fw.ad.State(s.ctx, fmt.Sprintf("w%d", fw.idx))
		if err != nil {
			s.clientDied(fw, "state", err)
			return nil
		}
		s.observe(fw, st)
	default:
		if a := s.kitWindowOn(fw); r < 40 && a != nil {
			// The kit as another user of the page acts against the
			// client (adversary.go).
			if acted, err := s.adversary(fw, a); acted || err != nil {
				s.drainForeign()
				return err
			}
		}
		req, ok := s.drawIntent(fw)
		if !ok {
			return nil
		}
		fw.coverage.Intents[req.Intent]++
		st, err := fw.ad.Intent(s.ctx, req)
		if err != nil {
			s.clientDied(fw, "intent "+req.Intent, err)
			return nil
		}
		s.logf("%s intent %s %s %s -> seq %d, %d pending", fw.name(), req.Intent, shortID(req.ID), req.Payload, st.Seq, len(st.Pending))
		s.rec.foreignIntent(fw, req)
		fw.rules.intent = &req
		s.observe(fw, st)
	}
	s.drainForeign()
	return nil
}

// kitWindowOn is the first kit window on fw's page (nil: none).
func (s *sim) kitWindowOn(fw *foreignWin) *win {
	for _, w := range s.wins {
		if w.page == fw.page {
			return w
		}
	}
	return nil
}

// drawIntent draws what the user of fw does, among the intents it
// implements: a command drawn as for a reference window on what it
// renders (coverage first, below), or undo/redo.
func (s *sim) drawIntent(fw *foreignWin) (adapter.IntentRequest, bool) {
	req := adapter.IntentRequest{Window: fmt.Sprintf("w%d", fw.idx)}
	if (fw.intents["undo"] || fw.intents["redo"]) && s.rng.IntN(12) == 0 {
		req.Intent = "undo"
		if !fw.intents["undo"] || (fw.intents["redo"] && s.rng.IntN(3) == 0) {
			req.Intent = "redo"
		}
	} else if owed := fw.owedHistoryIntent(); owed != "" {
		req.Intent = owed
	}
	if req.Intent != "" {
		req.IDs = []string{s.newID(), s.newID(), s.newID(), s.newID()}
		for _, id := range req.IDs {
			fw.undoIDs[id] = true
		}
		return req, true
	}
	if c, ok := s.drawPageIntent(fw); ok {
		fw.given[c.ID] = c
		req.Intent, req.ID, req.Payload = c.Type, c.ID, c.Payload
		return req, true
	}
	// Of up to 8 commands drawn on what the window renders, the first of
	// a type not yet given in the seed, else the type given least: every
	// declared intent is exercised early, not by luck.
	var pick *kbcore.Command
	for range 8 {
		c := s.drawOn(fw.doc)
		if !fw.intents[c.Type] {
			continue
		}
		if pick == nil || s.intentsGiven[c.Type] < s.intentsGiven[pick.Type] {
			pick = &c
		}
		if s.intentsGiven[c.Type] == 0 {
			break
		}
	}
	if pick == nil {
		return req, false
	}
	s.intentsGiven[pick.Type]++
	fw.given[pick.ID] = *pick
	req.Intent, req.ID, req.Payload = pick.Type, pick.ID, pick.Payload
	return req, true
}

// owedHistoryIntent is undo (or redo) when the client declared it and
// has not yet been given it though it has done enough to undo: four
// commands since its opening (or, for redo, an undo and two commands
// since). Drawn one time in 12 alone, a short run could give neither,
// and a declared intent would go unexercised by luck.
func (fw *foreignWin) owedHistoryIntent() string {
	in := fw.coverage.Intents
	switch {
	case fw.intents["undo"] && in["undo"] == 0 && len(fw.given) >= owedUndoAfter:
		return "undo"
	case fw.intents["redo"] && in["redo"] == 0 && (!fw.intents["undo"] || in["undo"] > 0) && len(fw.given) >= owedRedoAfter:
		return "redo"
	}
	return ""
}

// Commands a window is given before an undo (a redo) it declared is owed
// to it (spec/ADAPTER.md section 7; TestSpecStatesOwedIntents).
const (
	owedUndoAfter = 4
	owedRedoAfter = 6
)

// drainForeign takes in what the proxies recorded.
func (s *sim) drainForeign() {
	for _, fw := range s.foreign {
		for _, r := range fw.proxy.drain() {
			s.foreignRecord(fw, r)
		}
	}
}

func (s *sim) foreignRecord(fw *foreignWin, r proxyRec) {
	page := s.pages[fw.page]
	fw.rules.record(r, page)
	switch r.kind {
	case recPost:
		s.foreignPost(fw, r)
	case recAnswer:
		s.foreignAnswer(fw, r)
	case recPage:
		if r.page != page {
			return
		}
		if fw.pages++; fw.pages > 1 {
			s.stats.Refetches++ // the first is the window's opening
		}
		if fw.gapOpen {
			// Counted once refetched: a gap a refetch in flight already
			// covers is not one the client must refetch for again.
			s.stats.Gaps++
			fw.gapOpen = false
		}
	case recSnapshot:
		if r.page == page && r.err == "" {
			s.checkForeignOutcomes(fw, r)
		}
		if r.page == page && r.err == "" && r.seq > fw.covered {
			fw.covered = r.seq
			fw.advance()
			if fw.gapOpen && fw.covered >= fw.gapAt {
				fw.gapOpen = false
			}
		}
		if r.lost {
			s.foreignFault(fw, "lost-page-answer", "kb.page answer lost (fault)")
		}
	case recSubscribe:
		if r.page != page {
			return
		}
		fw.subs++
		if fw.subs > 1 {
			s.exercise(CheckResume)
			s.stats.Resumes++
		}
		if !r.hasAfter || r.after < fw.openSeq {
			after := "no lastEventId"
			if r.hasAfter {
				after = fmt.Sprintf("lastEventId %d", r.after)
			}
			s.find(CheckResume, "%s subscribed to page %s with %s, though it opened the page at seq %d: a window resubscribes after its last received seq (spec/window.md, spec/PROTOCOL.md 4.4)",
				fw.name(), shortID(page), after, fw.openSeq)
		}
	case recDeliver:
		if r.page != page {
			return
		}
		if r.seq > fw.covered {
			fw.ahead[r.seq] = true
			fw.advance()
		}
		if r.seq > fw.covered && !fw.gapOpen {
			fw.gapOpen, fw.gapAt, fw.gapHole = true, r.seq, fw.covered+1
		}
		if fw.gapOpen && fw.covered >= fw.gapAt {
			fw.gapOpen = false // the hole was filled by a later delivery
		}
		s.rec.foreignEcho(fw, r)
	case recDrop:
		s.stats.Dropped++
		s.foreignFault(fw, "dropped", fmt.Sprintf("echo %d dropped (fault)", r.seq))
	case recDup:
		s.stats.Duplicated++
		s.foreignFault(fw, "duplicated", fmt.Sprintf("echo %d duplicated (fault)", r.seq))
	case recReorder:
		s.stats.Reordered++
		s.foreignFault(fw, "reordered", fmt.Sprintf("echoes %d and %d reordered (fault)", r.after, r.seq))
	case recCut:
		s.stats.Cuts++
		s.foreignFault(fw, "socket-cut", "sockets cut (fault)")
	}
}

// advance moves covered over the seqs delivered ahead of it.
func (fw *foreignWin) advance() {
	for s := range fw.ahead {
		if s <= fw.covered {
			delete(fw.ahead, s)
		}
	}
	for fw.ahead[fw.covered+1] {
		delete(fw.ahead, fw.covered+1)
		fw.covered++
	}
}

func (s *sim) foreignFault(fw *foreignWin, kind, text string) {
	fw.coverage.Faults[kind]++
	s.logf("%s %s", fw.name(), text)
	s.rec.foreignFault(fw, text)
}

func (s *sim) foreignPost(fw *foreignWin, r proxyRec) {
	env := r.env
	c := kbcore.Command{ID: env.ID, Type: env.Type, Payload: env.Payload}
	o := s.ops[env.ID]
	if o == nil {
		o = &op{id: env.ID, page: env.PageID, cmd: c, call: r.at, win: fw.idx}
		s.ops[env.ID] = o
		s.opOrder = append(s.opOrder, env.ID)
		s.stats.Commands++
		s.types[c.Type]++
		s.rec.foreignPost(fw, r)
		given, ok := fw.given[env.ID]
		switch {
		case !ok && !fw.undoIDs[env.ID]:
			s.find(CheckExactlyOnce, "%s posted %s (%s %s) under an id no intent gave it: a command keeps its id, retries included (spec/PROTOCOL.md 4.1)",
				fw.name(), shortID(env.ID), c.Type, clip(c.Payload))
		case ok && (given.Type != c.Type || env.PageID != s.pages[fw.page]):
			s.find(CheckExactlyOnce, "%s posted id %s as %s on page %s; the intent was %s on page %s",
				fw.name(), shortID(env.ID), c.Type, shortID(env.PageID), given.Type, shortID(s.pages[fw.page]))
		}
		if env.DeviceID != s.devices[fw.dev].deviceID {
			s.find(CheckProtocol, "%s posted %s with device_id %s, not its device's %s", fw.name(), shortID(env.ID), env.DeviceID, s.devices[fw.dev].deviceID)
		}
	} else if o.win != fw.idx {
		s.find(CheckExactlyOnce, "%s posted %s, an id window %d posted before", fw.name(), shortID(env.ID), o.win)
	} else if o.refusedAt > 0 && o.posts == o.refusedAt {
		s.find(CheckRollback, "%s posted command %s (%s) again at %.3fs, though its post was answered 400 BAD_REQUEST: a 4xx other than 408, 409 and 429 is a refusal, final; the transport delivers reject {id, code: refused} and sends the command no more (spec/window.md, Refusals)",
			fw.name(), shortID(env.ID), c.Type, secs(r.at))
	}
	o.posts++
}

func clip(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

func (s *sim) foreignAnswer(fw *foreignWin, r proxyRec) {
	o := s.ops[r.id]
	if o == nil {
		return
	}
	if r.refused {
		if o.refusedAt == 0 {
			s.decide(r.id, 0, &kbcore.Rejection{Code: codeRefused})
			o.refusedAt = o.posts
			s.foreignFault(fw, "refused", fmt.Sprintf("kb.command %s refused 400 (the kit as the server)", shortID(r.id)))
		}
		return
	}
	if r.err != "" {
		s.stats.Retries++
		return
	}
	if fw.answered[r.id]++; fw.answered[r.id] == 1 {
		// The first decision the client was answered with: the server
		// may have decided an earlier post whose answer never left it
		// (an instance killed), so duplicate: true is allowed; a verdict
		// known from an echo must agree.
		switch {
		case o.srv.known && r.rej == nil && (o.srv.rejected != "" || o.srv.seq != r.seq):
			s.find(CheckExactlyOnce, "%s: %s (%s) answered seq %d, but the server had %s", fw.name(), shortID(r.id), o.cmd.Type, r.seq, o.srv)
		case o.srv.known && r.rej != nil && o.srv.rejected != r.rej.Code:
			s.find(CheckExactlyOnce, "%s: %s (%s) answered rejected %s, but the server had %s", fw.name(), shortID(r.id), o.cmd.Type, r.rej.Code, o.srv)
		case r.rej != nil:
			s.learnAt(r.id, verdict{rejected: r.rej.Code}, r.at)
		default:
			s.learnAt(r.id, verdict{seq: r.seq}, r.at)
		}
	} else {
		sc := &sendCall{w: &win{idx: fw.idx, page: fw.page}, c: o.cmd, rej: r.rej}
		sc.ack.Seq, sc.ack.Duplicate = r.seq, r.dup
		s.checkAnswer(sc)
	}
	if r.lost {
		s.stats.LostResp++
		s.foreignFault(fw, "lost-answer", fmt.Sprintf("answer to %s lost (fault)", shortID(r.id)))
		return
	}
	s.decide(r.id, r.seq, r.rej)
	if o.ret > r.at {
		o.ret = r.at
	}
	if r.rej == nil && r.seq > s.known[o.page] {
		s.known[o.page] = r.seq
	}
	if r.rej == nil && kbcore.DerivesElsewhere(o.cmd.Type) {
		// As for a reference window's (delivery.go): derived commands
		// land on other pages, titles change, a page is merged.
		s.refreshHeads(s.kitClient())
	}
}

// settleForeign brings every foreign window to its page's head with
// faults off: it waits for the client to send what it holds and take in
// what it is owed. A client that stops short of the head has its sockets
// cut once a second (it must resume from its seq); one that makes no
// progress within the echo timeout is left as it is, for the checkers.
func (s *sim) settleForeign() error {
	for _, fw := range s.foreign {
		fw.proxy.setQuiet()
	}
	probe := s.opts.Faults && !s.probed
	s.probed = true
	for _, fw := range s.foreign {
		if fw.dead != "" {
			continue
		}
		settled, err := s.settleOne(fw)
		if err != nil {
			return err
		}
		// Settled, the client is owed nothing: the echo probe's dropped
		// echo is one only its own timer can see missing (echoprobe.go).
		if probe && settled && s.echoProbe(fw) {
			if _, err := s.settleOne(fw); err != nil {
				return err
			}
		}
	}
	s.drainForeign()
	return nil
}

// settleOne waits for fw to reach its page's head with nothing pending
// (settleForeign); false when it did not (or its client died).
func (s *sim) settleOne(fw *foreignWin) (bool, error) {
	page := s.pages[fw.page]
	mark, since, poked := "", time.Now(), time.Now()
	for {
		if err := s.ctx.Err(); err != nil {
			return false, err
		}
		s.drainForeign()
		st, err := fw.ad.State(s.ctx, fmt.Sprintf("w%d", fw.idx))
		if err != nil {
			s.clientDied(fw, "state", err)
			return false, nil
		}
		s.observe(fw, st)
		if len(st.Pending) == 0 && st.Seq >= s.known[page] {
			return true, nil
		}
		if m := fmt.Sprint(st.Seq, st.Pending); m != mark {
			mark, since = m, time.Now()
		}
		if time.Since(since) > s.opts.EchoTimeout {
			s.logf("%s did not settle: seq %d of %d, %d pending", fw.name(), st.Seq, s.known[page], len(st.Pending))
			return false, nil
		}
		if st.Seq < s.known[page] && time.Since(poked) > time.Second {
			poked = time.Now()
			s.logf("%s stalled at seq %d of %d (%d pending): its sockets are cut, it must resume", fw.name(), st.Seq, s.known[page], len(st.Pending))
			fw.proxy.cut()
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-s.ctx.Done():
		}
	}
}

// kitClient is the kit's own client of the first device on the first
// instance (reads heads, snapshots and logs).
func (s *sim) kitClient() *client.Client { return s.devices[0].clients[0] }

// quiesceAll quiesces the reference windows and the foreign ones; the
// foreign windows' last commands move the heads the reference windows
// must then reach, so it runs twice when there are foreign windows.
func (s *sim) quiesceAll() error {
	if err := s.quiesce(); err != nil || len(s.foreign) == 0 {
		return err
	}
	for range 2 {
		if err := s.settleForeign(); err != nil {
			return err
		}
		if err := s.quiesce(); err != nil {
			return err
		}
	}
	return nil
}
