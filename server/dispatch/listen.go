package dispatch

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/subspace/kbkit/server/pglisten"
	"github.com/subspace/kbkit/server/store"
)

// noteLocked records that seq of page id is committed, and catches the
// page up. local says one of the store's own connections committed it:
// its commit hook delivers it, so the log is read only if that has not
// happened within localGrace of the notification.
func (h *Hub) noteLocked(id string, seq int64, now time.Time, local bool) {
	p := h.pages[id]
	if p == nil || seq <= p.cursor {
		return
	}
	if seq > p.target {
		p.target = seq
	}
	if p.pendingSince.IsZero() {
		p.pendingSince = now
	}
	if !local || p.running { // a running catch-up reads once more
		h.kickLocked(p)
		return
	}
	if p.graceArmed {
		// The armed grace covers the seqs noted before it; when it ends
		// it grants the later ones (this one) a grace of their own.
		return
	}
	h.armGraceLocked(p)
}

// armGraceLocked gives the page's local notifications up to its target
// localGrace for their commit hooks.
func (h *Hub) armGraceLocked(p *page) {
	p.graceArmed = true
	p.graceSeq = p.target
	h.afterFunc(h.grace, func() { h.graceEnded(p) })
}

// graceEnded reads the page's log if a seq noted when the grace was armed
// is still undelivered (its commit hook was skipped: the COMMIT's answer
// was lost, or the commit was not the store's). Seqs noted since then
// have not had their whole grace: they get one of their own. A single
// timer per page would otherwise end the grace of a notification that
// came just before it fired, and read the log for a commit whose hook was
// about to deliver it.
func (h *Hub) graceEnded(p *page) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p.graceArmed = false
	if p.removed || h.closed {
		return
	}
	switch {
	case p.cursor < p.graceSeq:
		h.kickLocked(p)
	case p.cursor < p.target:
		h.armGraceLocked(p)
	}
}

// localGrace is how long a notification of this process's own commit
// waits for the commit hook's delivery (which comes first, or within a
// group's gathering of its next commands: a few milliseconds) before the
// page is caught up from the log: the hook is skipped only when the
// COMMIT's answer was lost.
const localGrace = 50 * time.Millisecond

// notify handles one notification's page heads (store.NotifyHeads);
// local says one of the store's own connections sent it.
func (h *Hub) notify(payload string, local bool) {
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	store.NotifyHeads(payload, func(page string, seq int64) {
		if id, err := normalize(page); err == nil {
			h.noteLocked(id, seq, now, local)
		}
	})
}

// checkAll reads the committed seq of every subscribed page and catches up
// the pages that are behind: after each (re)connect and on every poll.
func (h *Hub) checkAll(ctx context.Context) {
	h.mu.Lock()
	ids := make([]string, 0, len(h.pages))
	for id := range h.pages {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), headsChunk)]
		ids = ids[len(chunk):]
		qctx, cancel := context.WithTimeout(ctx, queryTimeout)
		rows, err := h.st.Pool().Query(qctx, `SELECT id::text, seq FROM pages WHERE id = ANY($1::uuid[])`, chunk)
		if err != nil {
			cancel()
			if ctx.Err() == nil {
				h.log.Warn("dispatch: poll page heads", "err", err)
			}
			return
		}
		type head struct {
			id  string
			seq int64
		}
		heads, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (head, error) {
			var hd head
			err := r.Scan(&hd.id, &hd.seq)
			return hd, err
		})
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				h.log.Warn("dispatch: poll page heads", "err", err)
			}
			return
		}
		now := time.Now()
		h.mu.Lock()
		for _, hd := range heads {
			h.noteLocked(hd.id, hd.seq, now, false)
		}
		h.mu.Unlock()
	}
}

// Run dispatches until ctx is done, then closes every subscription with
// ErrClosed and returns ctx.Err(). It runs the hub's listener (Listener:
// one connection LISTENing on store.NotifyChannel and on the channels
// other handlers added, opened again with backoff when it is lost) and
// polls every PollInterval. Run may be called once.
func (h *Hub) Run(ctx context.Context) error {
	if !h.started.CompareAndSwap(false, true) {
		return errors.New("dispatch: Run called twice")
	}
	stop := context.AfterFunc(ctx, h.cancel)
	defer stop()
	defer h.shutdown()

	h.mu.Lock()
	if !h.closed {
		h.wg.Add(1)
		go h.poller()
	}
	h.mu.Unlock()
	_ = h.listener.Run(h.ctx)
	return ctx.Err()
}

// Listener is the hub's LISTEN connection, which the server shares for
// its own channels (pglisten.Listener.Handle); Run runs it.
func (h *Hub) Listener() *pglisten.Listener { return h.listener }

// notifications is the hub's handler of store.NotifyChannel.
type notifications struct{ h *Hub }

// Backlog catches up every subscribed page (after each (re)connect).
func (n notifications) Backlog(ctx context.Context) error {
	n.h.checkAll(ctx)
	return nil
}

func (n notifications) Notify(note *pgconn.Notification) {
	n.h.notify(note.Payload, n.h.st.LocalBackend(note.PID))
}

func (notifications) Lost(error) {}

func (h *Hub) poller() {
	defer h.wg.Done()
	t := time.NewTicker(h.poll)
	defer t.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-t.C:
			h.checkAll(h.ctx)
		}
	}
}

// shutdown stops the hub: no new subscriptions, every open one gets
// ErrClosed, and every goroutine of the hub has exited when it returns.
func (h *Hub) shutdown() {
	h.cancel()
	h.mu.Lock()
	h.closed = true
	for _, p := range h.pages {
		for len(p.subs) > 0 {
			p.subs[len(p.subs)-1].closeLocked(ErrClosed)
		}
	}
	h.mu.Unlock()
	h.wg.Wait()
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
