package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/subspace/kbkit/client"
	lgeditor "github.com/subspace/kbkit/loadgen/editor"
	"github.com/subspace/kbkit/loadgen/metrics"
	"github.com/subspace/kbkit/loadgen/plan"
)

// ---- setup ----

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

	// Windows: the plan's slot k of page p belongs to editor
	// (p·perPage + k) mod E, so a page's windows are distinct editors.
	r.plan = plan.New(cfg.RunID, cfg.Workload, cfg.Editors)
	nPages, perPage := r.plan.Pages, r.plan.PerPage
	var mine []*page
	for p, title := range r.plan.Titles() {
		r.sess.SetTitle(r.plan.PageID(p), title)
	}
	for p := 0; p < nPages; p++ {
		pg := &page{idx: p, id: r.plan.PageID(p)}
		r.pages = append(r.pages, pg)
		for k := 0; k < perPage; k++ {
			if ed := eds[r.plan.Editor(p, k)]; ed != nil {
				w := &window{ed: ed, pg: pg}
				pg.wins = append(pg.wins, w)
				ed.wins = append(ed.wins, w)
				r.wins = append(r.wins, w)
			}
		}
		if len(pg.wins) > 0 {
			mine = append(mine, pg)
		}
	}
	for _, ed := range r.editors {
		if len(ed.wins) == 0 {
			return fmt.Errorf("loadgen: editor %d has no window (%d pages × %d windows for %d editors)",
				ed.idx, nPages, perPage, cfg.Editors)
		}
	}
	r.logf("setup: %d devices, %d pages (%d here), %d windows here, %d editors here", len(r.devices), nPages, len(mine), len(r.wins), len(r.editors))

	// Pages: every shard with a window on a page lays it out, and opens
	// its windows only once that returned. The setup command ids derive
	// from the run id, so a repeat is answered, not redone, and a shard
	// whose repeats were all answered knows the whole layout is there: no
	// shard edits a page whose seed nodes are still being created (a
	// shard that only waited for the page to exist could delete s13
	// before its creator sent "create s14 after s13").
	started := time.Now()
	err = parallel(ctx, len(mine), 16, func(i int) error {
		if err := r.plan.CreatePage(ctx, r.devices[0].c, r.devices[0].id, mine[i].idx); err != nil {
			return fmt.Errorf("loadgen: %w", err)
		}
		return nil
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

// open starts a window as a client does: a snapshot, then the
// subscription from its seq.
func (r *runner) open(ctx context.Context, w *window) error {
	// The workloads never undo: a window keeps no undo history, which
	// would otherwise grow with every command of the run (hundreds of
	// bytes each, thousands of commands a second) and hold its inverse
	// commands until the end.
	o := lgeditor.Options{DeviceID: w.ed.dev.id, Recorder: w.ed.rec, Workload: r.cfg.Workload.Name,
		CommandsOnSocket: r.cfg.Commands == CommandsWS, UndoDepth: client.NoUndoHistory}
	ew, err := r.sess.Open(ctx, w.ed.dev.c, w.pg.id, o)
	if err != nil {
		return fmt.Errorf("loadgen: page %d: %w", w.pg.idx, err)
	}
	w.ew = ew
	return nil
}
