package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/loadgen/metrics"
)

// ---- setup ----

// runSpace namespaces the ids derived from a run id.
var runSpace = uuid.MustParse("0b6c3e52-64a4-4f8e-9d1f-5f0c2a7e4b11")

func (r *runner) derived(parts ...any) string {
	return uuid.NewSHA1(runSpace, fmt.Append([]byte(r.cfg.RunID), parts...)).String()
}

func (r *runner) pageTitle(p int) string {
	tag := r.cfg.RunID
	if len(tag) > 8 {
		tag = tag[:8]
	}
	if p < 0 {
		return "LG " + tag
	}
	return fmt.Sprintf("LG %s p%d", tag, p)
}

func (r *runner) setup(ctx context.Context) error {
	cfg := r.cfg
	eps := r.target.Endpoints()
	if len(eps) == 0 {
		return errors.New("loadgen: the target has no endpoint")
	}
	tokens, err := r.target.Devices(ctx, cfg.Devices)
	if err != nil {
		return err
	}
	r.devices = make([]*device, len(tokens))
	err = parallel(ctx, len(tokens), 16, func(i int) error {
		c := client.New(eps[i%len(eps)], tokens[i])
		var me client.Device
		err := retry(ctx, 60, func() error { var err error; me, err = c.Whoami(ctx); return err })
		if err != nil {
			return fmt.Errorf("loadgen: kb.whoami: %w", err)
		}
		r.devices[i] = &device{c: c, id: me.DeviceID}
		return nil
	})
	if err != nil {
		return err
	}

	nrec := min(len(cfg.Shard.Editors(cfg.Editors)), maxRecorders)
	for i := 0; i < max(nrec, 1); i++ {
		r.recs = append(r.recs, metrics.NewRecorder())
	}
	eds := map[int]*editor{}
	for k, e := range cfg.Shard.Editors(cfg.Editors) {
		ed := &editor{idx: e, dev: r.devices[e%len(r.devices)], rec: r.recs[k%len(r.recs)],
			rng: rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(e)))}
		eds[e] = ed
		r.editors = append(r.editors, ed)
	}
	if len(r.editors) == 0 {
		return fmt.Errorf("loadgen: shard %s has no editor of %d", cfg.Shard, cfg.Editors)
	}

	// Windows: slot k of page p belongs to editor (p·perPage + k) mod E,
	// so a page's windows are distinct editors.
	nPages, perPage := cfg.Workload.Layout(cfg.Editors)
	var mine []*page
	var creators []bool
	for p := 0; p < nPages; p++ {
		pg := &page{idx: p, id: r.derived("/page/", p)}
		r.pages = append(r.pages, pg)
		r.titles = append(r.titles, r.pageTitle(p))
		for k := 0; k < perPage; k++ {
			if ed := eds[(p*perPage+k)%cfg.Editors]; ed != nil {
				w := &window{ed: ed, pg: pg, envs: map[string]kbcore.Envelope{},
					changed: make(chan struct{}, 1), done: make(chan struct{})}
				pg.wins = append(pg.wins, w)
				ed.wins = append(ed.wins, w)
				r.wins = append(r.wins, w)
			}
		}
		if len(pg.wins) > 0 {
			mine = append(mine, pg)
			creators = append(creators, cfg.Shard.Has((p*perPage)%cfg.Editors))
		}
	}
	for _, ed := range r.editors {
		if len(ed.wins) == 0 {
			return fmt.Errorf("loadgen: editor %d has no window (%d pages × %d windows for %d editors)",
				ed.idx, nPages, perPage, cfg.Editors)
		}
	}
	r.logf("setup: %d devices, %d pages (%d here), %d windows here, %d editors here", len(r.devices), nPages, len(mine), len(r.wins), len(r.editors))

	// Pages: the shard of a page's first window creates it; setup command
	// ids derive from the run id, so a repeat is answered, not redone.
	started := time.Now()
	err = parallel(ctx, len(mine), 16, func(i int) error {
		if !creators[i] {
			return nil
		}
		return r.createPage(ctx, mine[i], r.devices[0])
	})
	if err != nil {
		return err
	}
	r.logf("setup: pages created in %s", time.Since(started).Round(time.Millisecond))

	started = time.Now()
	err = parallel(ctx, len(r.wins), 32, func(i int) error { return r.open(ctx, r.wins[i]) })
	if err != nil {
		return err
	}
	r.logf("setup: %d windows open in %s", len(r.wins), time.Since(started).Round(time.Millisecond))
	return nil
}

func (r *runner) createPage(ctx context.Context, pg *page, dev *device) error {
	send := func(k int, typ string, payload any) error {
		b, _ := json.Marshal(payload)
		env := kbcore.Envelope{ID: r.derived("/page/", pg.idx, "/cmd/", k), DeviceID: dev.id, PageID: pg.id, Type: typ, Payload: b}
		return retry(ctx, 60, func() error {
			_, rej, err := dev.c.Command(ctx, env)
			if err == nil && rej != nil {
				return fmt.Errorf("loadgen: setup %s on page %d rejected: %s", typ, pg.idx, rej.Message)
			}
			return err
		})
	}
	if err := send(0, kbcore.TypeCreatePage, map[string]any{"title": r.titles[pg.idx]}); err != nil {
		return err
	}
	for k := 0; k < r.cfg.Workload.Nodes; k++ {
		p := map[string]any{"node": fmt.Sprintf("s%d", k), "text": fmt.Sprintf("seed %d", k)}
		if k > 0 {
			p["after"] = fmt.Sprintf("s%d", k-1)
		}
		if err := send(k+1, kbcore.TypeCreateAfter, p); err != nil {
			return err
		}
	}
	return nil
}

// open starts a window as a client does: a snapshot, then the
// subscription from its seq. A page another shard creates may not exist
// yet (NOT_FOUND): wait for it.
func (r *runner) open(ctx context.Context, w *window) error {
	c := w.ed.dev.c
	var snap client.Snapshot
	deadline := time.Now().Add(2 * time.Minute)
	for attempt := 0; ; attempt++ {
		var err error
		snap, err = c.Page(ctx, w.pg.id, nil)
		if err == nil {
			break
		}
		var ce *client.Error
		notYet := errors.As(err, &ce) && ce.Code == "NOT_FOUND" && r.cfg.Shard.N > 1
		if (!notYet && !client.IsRetryable(err)) || time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("loadgen: open page %d: %w", w.pg.idx, err)
		}
		pause(ctx, attempt)
	}
	w.w = kbcore.NewWindow(snap.Doc, snap.Seq)
	w.pg.saw(snap.Seq)
	sub, err := r.subscribe(ctx, w)
	if err != nil {
		return fmt.Errorf("loadgen: subscribe to page %d: %w", w.pg.idx, err)
	}
	w.mu.Lock()
	w.sub = sub
	w.mu.Unlock()
	go r.read(w)
	return nil
}

func (r *runner) subscribe(ctx context.Context, w *window) (*client.Subscription, error) {
	var sub *client.Subscription
	err := retry(ctx, 40, func() error {
		w.mu.Lock()
		after := w.w.Seq()
		w.mu.Unlock()
		var err error
		sub, err = w.ed.dev.c.Subscribe(ctx, w.pg.id, after)
		if err != nil {
			w.ed.rec.Error("subscribe", time.Now())
		}
		return err
	})
	if err == nil {
		w.ed.rec.Count(metrics.Connects, time.Now(), 1)
	}
	return sub, err
}

// ---- echoes ----

// read applies the window's events until the run closes it,
// resubscribing from the window's seq when a subscription ends.
func (r *runner) read(w *window) {
	defer close(w.done)
	for {
		w.mu.Lock()
		sub := w.sub
		w.mu.Unlock()
		for ev := range sub.Events() {
			r.echo(w, ev)
		}
		if r.closing.Load() {
			return
		}
		if err := sub.Err(); err != nil && !errors.Is(err, client.ErrReconnect) {
			w.ed.rec.Error("subscription-ended", time.Now())
		}
		sub.Close()
		ctx, cancel := context.WithTimeout(r.closed, time.Minute)
		next, err := r.subscribe(ctx, w)
		cancel()
		if err != nil {
			return
		}
		w.ed.rec.Count(metrics.Reconnects, time.Now(), 1)
		w.mu.Lock()
		if r.closing.Load() {
			w.mu.Unlock()
			next.Close()
			return
		}
		w.sub = next
		w.mu.Unlock()
	}
}

func (r *runner) echo(w *window, ev client.Event) {
	now := time.Now()
	rec := w.ed.rec
	w.mu.Lock()
	before := w.w.Seq()
	acts := w.w.Echo(ev.Seq, ev.Cmd)
	applied := w.w.Seq() > before
	if applied {
		delete(w.envs, ev.Cmd.ID)
	}
	w.mu.Unlock()
	w.pg.saw(ev.Seq)
	if applied {
		// An event counts when a window applies it and its command is
		// measured: sent after the warm-up here, or by another process
		// (no stamp) while measuring. So echoes = committed × windows of
		// the page in a single process.
		counted := r.measuring.Load()
		if v, ok := r.stamps.Load(ev.Cmd.ID); ok {
			st := v.(*stamp)
			counted = st.measured
			switch {
			case !st.measured:
			case st.origin == w:
				rec.Latency(metrics.Echo, now, now.Sub(st.start))
				rec.TypeLatency(ev.Cmd.Type, metrics.Echo, now.Sub(st.start))
			default:
				rec.Latency(metrics.Fanout, now, now.Sub(st.start))
			}
			if st.left.Add(-1) <= 0 {
				r.stamps.Delete(ev.Cmd.ID)
			}
		}
		if counted {
			rec.Count(metrics.Echoes, now, 1)
		}
		if ev.Cmd.Type == kbcore.TypeRenamePage {
			var p kbcore.RenamePage
			if json.Unmarshal(ev.Cmd.Payload, &p) == nil && p.Title != nil {
				r.setTitle(w.pg.idx, *p.Title)
			}
		}
	}
	for _, a := range acts {
		if a.Kind == kbcore.ActionRefetch {
			r.refetch(w)
		}
	}
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// refetch replaces the window's server document after a gap and resends
// the pending commands the snapshot does not know (same ids).
func (r *runner) refetch(w *window) {
	rec := w.ed.rec
	rec.Count(metrics.Refetches, time.Now(), 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w.mu.Lock()
	var ids []string
	for _, c := range w.w.Pending() {
		ids = append(ids, c.ID)
	}
	w.mu.Unlock()
	var snap client.Snapshot
	err := retry(ctx, 20, func() error { var err error; snap, err = w.ed.dev.c.Page(ctx, w.pg.id, ids); return err })
	if err != nil {
		rec.Error("refetch", time.Now())
		return
	}
	w.mu.Lock()
	acts := w.w.Snapshot(snap.Doc, snap.Seq, snap.Outcomes)
	var resend []kbcore.Envelope
	for _, a := range acts {
		if env, ok := w.envs[a.ID]; ok && a.Kind == kbcore.ActionSend && a.ID != w.sending {
			resend = append(resend, env)
		}
	}
	w.mu.Unlock()
	w.pg.saw(snap.Seq)
	for _, env := range resend {
		rec.Count(metrics.Retries, time.Now(), 1)
		_, rej, err := w.ed.dev.c.Command(ctx, env)
		if err == nil && rej != nil {
			w.mu.Lock()
			w.w.Reject(env.ID, rej.Code)
			delete(w.envs, env.ID)
			w.mu.Unlock()
		}
	}
}
