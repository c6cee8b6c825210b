package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/subspace/kbkit/server/pglisten"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/subspace/kbkit/server/store"
)

// Errors reported by Subscription.Err.
var (
	// ErrSlow: the subscriber's buffer was full when an event had to be
	// delivered. Resubscribe with the last seq received.
	ErrSlow = errors.New("dispatch: subscriber too slow, resubscribe after its last seq")
	// ErrClosed: the subscription was closed by Close, or the hub shut down
	// (Subscribe also returns it once the hub has shut down).
	ErrClosed = errors.New("dispatch: closed")
)

// Defaults of the options.
const (
	DefaultPollInterval = time.Second
	DefaultBuffer       = 64
)

const (
	batchSize   = 1000 // log entries per read
	maxCatchUps = 8    // concurrent page catch-ups (pool connections)
	// queryTimeout bounds each read of the dispatcher: on a partition from
	// Postgres (packets dropped) a read would otherwise hold its pool
	// connection until TCP gives up, and the pool would run dry.
	queryTimeout = 5 * time.Second
	minBackoff   = 50 * time.Millisecond
	maxBackoff   = 5 * time.Second
	headsChunk   = 1000 // page ids per heads query
)

// Event is one committed command of a page. Events are shared between the
// subscribers of a page: do not modify them.
type Event struct {
	PageID string `json:"page_id"`
	store.Entry

	wireOnce sync.Once
	wire     []byte
}

// Wire returns encode(e), computed once per event: a live event is one
// value shared by every subscriber of its page, so a server that sends it
// to a thousand sockets encodes it once and writes the same bytes to each.
// The bytes must not be modified; every caller must pass the same encode.
func (e *Event) Wire(encode func(*Event) []byte) []byte {
	e.wireOnce.Do(func() { e.wire = encode(e) })
	return e.wire
}

// Option configures a Hub.
type Option func(*Hub)

// Logger sets the logger (default slog.Default()).
func Logger(l *slog.Logger) Option {
	return func(h *Hub) {
		if l != nil {
			h.log = l
		}
	}
}

// PollInterval sets the period of the safety catch-up poll, which finds
// commands whose notification was lost (default 1s).
func PollInterval(d time.Duration) Option {
	return func(h *Hub) {
		if d > 0 {
			h.poll = d
		}
	}
}

// Buffer sets the channel size of each subscription (default 64). A live
// subscriber whose channel is full when an event arrives gets ErrSlow.
func Buffer(n int) Option {
	return func(h *Hub) {
		if n > 0 {
			h.buf = n
		}
	}
}

// Hub dispatches committed commands to the subscribers of one server
// instance. It is safe for concurrent use.
type Hub struct {
	st   *store.Store
	log  *slog.Logger
	poll time.Duration
	buf  int

	ctx     context.Context // canceled when Run's ctx is done
	cancel  context.CancelFunc
	sem     chan struct{} // bounds concurrent page catch-ups
	started atomic.Bool
	wg      sync.WaitGroup // every goroutine of the hub; Add only under mu while !closed

	mu     sync.Mutex
	closed bool
	pages  map[string]*page // pages with at least one subscriber
	nsubs  int

	logReads atomic.Int64 // catch-up reads of a page's log

	// grace and afterFunc time the wait of a local notification for its
	// commit hook (localGrace and time.AfterFunc; tests end it at will).
	grace     time.Duration
	afterFunc func(time.Duration, func())

	listener *pglisten.Listener
}

// page is the hub's state of one page with local subscribers; all fields
// are guarded by Hub.mu.
type page struct {
	id string
	// cursor: every seq <= cursor has been handed to the page's live
	// subscribers (or predates them). Every live subscriber has next > cursor.
	cursor int64
	// target: the highest seq known to be committed (notifications, polls).
	target int64
	// pendingSince: when the oldest undelivered notification arrived.
	pendingSince time.Time
	subs         []*Subscription
	running      bool  // a catch-up goroutine owns the page
	graceArmed   bool  // a local notification waits for the commit hook (noteLocked)
	graceSeq     int64 // the target when the grace was armed (graceEnded)
	dirty        bool  // catch up again: something may have been committed
	removed      bool  // no longer in Hub.pages
}

// Sink receives a subscription's events in place of a channel
// (SubscribeSink): a server hands them to its connection's outbound queue
// without a channel or a goroutine per subscription.
type Sink interface {
	// Live hands a live event, with the hub's lock held: it must not block
	// or call the hub. false means the subscriber is behind: the
	// subscription ends with ErrSlow (resubscribe after the last seq it
	// took).
	Live(ev *Event) bool
	// Replay hands an event read from the log, without the hub's lock; it
	// may block until the subscriber has room. false (ctx is done, or the
	// subscriber is gone) ends the replay and the subscription.
	Replay(ctx context.Context, ev *Event) bool
	// Ended is called once, after the last event, with what Err reports;
	// possibly with the hub's lock held: it must not block or call the hub.
	Ended(err error)
}

// Subscription is one subscriber's stream of a page's events.
type Subscription struct {
	h    *Hub
	p    *page
	ch   chan *Event
	sink Sink
	// Guarded by Hub.mu, except next while replaying (owned by the replay
	// goroutine until it turns the subscription live under Hub.mu).
	next         int64 // the seq to deliver next
	idx          int   // position in p.subs
	err          error
	done         bool
	replaying    bool
	cancelReplay context.CancelFunc
	stopCtx      func() bool
}

// New returns a hub on st. Call Run to start it.
func New(st *store.Store, opts ...Option) *Hub {
	h := &Hub{
		st:    st,
		log:   slog.Default(),
		poll:  DefaultPollInterval,
		buf:   DefaultBuffer,
		sem:   make(chan struct{}, maxCatchUps),
		pages: map[string]*page{},
		grace: localGrace,
		afterFunc: func(d time.Duration, f func()) {
			time.AfterFunc(d, f)
		},
	}
	for _, o := range opts {
		o(h)
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.listener = pglisten.New(func() *pgx.ConnConfig { return st.Pool().Config().ConnConfig.Copy() }, h.log)
	h.listener.Handle(notifications{h}, store.NotifyChannel)
	st.OnCommit(h.committed)
	return h
}

// committed hands the commands this process just committed on a page to
// its live subscribers at once, without reading them back from the log:
// when they follow the page's cursor. Anything else (a gap: another
// instance committed in between; a page nobody here watches) is left to
// the notification and the catch-up, which skip what was delivered here.
func (h *Hub) committed(pageID string, entries []store.Entry) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.pages[pageID]
	if p == nil || p.removed || h.closed || !h.started.Load() {
		return
	}
	for len(entries) > 0 && entries[0].Seq <= p.cursor {
		entries = entries[1:]
	}
	if len(entries) == 0 || entries[0].Seq != p.cursor+1 {
		return
	}
	h.fanoutLocked(p, entries)
}

// C is the subscription's channel of events: seq after+1, after+2, ... in
// order, without gaps or duplicates. It is closed when the subscription
// ends; Err tells why.
func (s *Subscription) C() <-chan *Event { return s.ch }

// Err reports why C was closed: ErrSlow, ErrClosed or the error of the ctx
// given to Subscribe. It is nil while the subscription is open.
func (s *Subscription) Err() error {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	return s.err
}

// Close ends the subscription (Err then reports ErrClosed). It may be
// called more than once.
func (s *Subscription) Close() {
	s.h.mu.Lock()
	s.closeLocked(ErrClosed)
	s.h.mu.Unlock()
}

// closeLocked ends s with err; C is closed now if s is live, else by the
// replay goroutine as it exits.
func (s *Subscription) closeLocked(err error) {
	if s.done {
		return
	}
	s.done, s.err = true, err
	if s.stopCtx != nil {
		s.stopCtx()
	}
	h, p := s.h, s.p
	last := len(p.subs) - 1
	p.subs[s.idx] = p.subs[last]
	p.subs[s.idx].idx = s.idx
	p.subs[last] = nil
	p.subs = p.subs[:last]
	h.nsubs--
	if len(p.subs) == 0 && !p.removed {
		p.removed = true
		delete(h.pages, p.id)
	}
	if s.replaying {
		s.cancelReplay()
	} else {
		s.finish()
	}
}

// finish closes C, or tells the sink, once the last event is handed.
func (s *Subscription) finish() {
	if s.sink != nil {
		s.sink.Ended(s.err)
	} else {
		close(s.ch)
	}
}

// Subscribers returns the number of open subscriptions.
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.nsubs
}

// Lag returns the age of the oldest notification (or poll finding) of a
// subscribed page whose commands have not been delivered yet; 0 if none.
// Best effort, for metrics.
func (h *Hub) Lag() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	var oldest time.Time
	for _, p := range h.pages {
		if !p.pendingSince.IsZero() && (oldest.IsZero() || p.pendingSince.Before(oldest)) {
			oldest = p.pendingSince
		}
	}
	if oldest.IsZero() {
		return 0
	}
	return time.Since(oldest)
}

// normalize returns the canonical text of a page id.
func normalize(pageID string) (string, error) {
	id, err := uuid.Parse(pageID)
	if err != nil {
		return "", fmt.Errorf("dispatch: page id %q: %w", pageID, err)
	}
	return id.String(), nil
}

// Subscribe returns the events of page pageID with seq > after: first the
// ones already committed (replayed from the log), then live ones, in seq
// order without gaps or duplicates. The subscription ends when ctx is done,
// on Close, on ErrSlow, or when the hub shuts down. A page that does not
// exist yet is fine (its events start with create-page).
func (h *Hub) Subscribe(ctx context.Context, pageID string, after int64) (*Subscription, error) {
	return h.subscribe(ctx, pageID, after, nil)
}

// SubscribeSink is Subscribe with the events handed to sink instead of a
// channel (C is then nil). ctx bounds the setup only: the subscription
// lasts until Close, ErrSlow or the hub's shutdown, and sink.Ended tells
// which. An idle sink subscription holds no goroutine and no buffer.
func (h *Hub) SubscribeSink(ctx context.Context, pageID string, after int64, sink Sink) (*Subscription, error) {
	return h.subscribe(ctx, pageID, after, sink)
}

// Buffer is the channel size of a subscription (the Buffer option): how
// far a live subscriber may fall behind.
func (h *Hub) Buffer() int { return h.buf }

func (h *Hub) subscribe(ctx context.Context, pageID string, after int64, sink Sink) (*Subscription, error) {
	id, err := normalize(pageID)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if after < 0 {
		after = 0
	}
	h.mu.Lock()
	p := h.pages[id]
	if p == nil && !h.closed {
		h.mu.Unlock()
		head, err := h.head(ctx, id)
		if err != nil {
			return nil, err
		}
		h.mu.Lock()
		if p = h.pages[id]; p == nil && !h.closed {
			// Any committed seq is a valid cursor. Notifications that came
			// before the page was registered were dropped: catch up once.
			p = &page{id: id, cursor: head, target: head}
			h.pages[id] = p
			h.kickLocked(p)
		}
	}
	if h.closed {
		h.mu.Unlock()
		return nil, ErrClosed
	}
	s := &Subscription{h: h, p: p, sink: sink, next: after + 1, idx: len(p.subs)}
	if sink == nil {
		s.ch = make(chan *Event, h.buf)
	}
	p.subs = append(p.subs, s)
	h.nsubs++
	if s.next <= p.cursor {
		var rctx context.Context
		rctx, s.cancelReplay = context.WithCancel(h.ctx)
		s.replaying = true
		h.wg.Add(1)
		go h.replay(rctx, s)
	}
	if sink == nil && ctx.Done() != nil {
		// Runs f in its own goroutine, also if ctx is already done.
		s.stopCtx = context.AfterFunc(ctx, func() {
			h.mu.Lock()
			s.closeLocked(ctx.Err())
			h.mu.Unlock()
		})
	}
	h.mu.Unlock()
	return s, nil
}

// head reads a page's committed seq (0 if the page does not exist yet).
// pages.seq is updated in the transaction that logs the seq, so every seq
// up to it is readable from the log.
func (h *Hub) head(ctx context.Context, id string) (int64, error) {
	var seq int64
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	err := h.st.Pool().QueryRow(ctx, `SELECT seq FROM pages WHERE id = $1`, id).Scan(&seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("dispatch: read page head: %w", err)
	}
	return seq, nil
}

// replay sends s its missing events from the log with blocking sends until
// it has caught up with the page's cursor, then turns it live.
func (h *Hub) replay(ctx context.Context, s *Subscription) {
	defer h.wg.Done()
	backoff := minBackoff
	for {
		h.mu.Lock()
		if !s.done && ctx.Err() != nil { // the hub is shutting down
			s.closeLocked(ErrClosed)
		}
		if s.done {
			h.mu.Unlock()
			s.finish()
			return
		}
		if s.next > s.p.cursor {
			s.replaying = false
			s.cancelReplay()
			s.cancelReplay = nil
			h.mu.Unlock()
			return
		}
		from := s.next - 1
		h.mu.Unlock()

		lctx, cancel := context.WithTimeout(ctx, queryTimeout)
		entries, err := h.st.Log(lctx, s.p.id, from, batchSize)
		cancel()
		if err == nil && len(entries) == 0 {
			err = fmt.Errorf("dispatch: log of page %s has nothing after seq %d", s.p.id, from)
		}
		if err != nil {
			if ctx.Err() == nil {
				h.log.Warn("dispatch: replay", "page", s.p.id, "after", from, "err", err)
			}
			sleep(ctx, backoff)
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		backoff = minBackoff
	send:
		for _, e := range entries {
			if e.Seq != s.next {
				break // impossible: the log is gapless
			}
			if s.sink != nil {
				if !s.sink.Replay(ctx, &Event{PageID: s.p.id, Entry: e}) {
					h.mu.Lock()
					s.closeLocked(ErrClosed)
					h.mu.Unlock()
					break send
				}
				s.next++
				continue
			}
			select {
			case s.ch <- &Event{PageID: s.p.id, Entry: e}:
				s.next++
			case <-ctx.Done():
				break send
			}
		}
	}
}

// kickLocked makes the page catch up (again).
func (h *Hub) kickLocked(p *page) {
	p.dirty = true
	if p.running || h.closed || p.removed {
		return
	}
	p.running = true
	h.wg.Add(1)
	go h.catchUp(p)
}

// catchUp reads the page's log after its cursor and fans the entries out,
// until nothing new is known. Kicks while it runs coalesce into one more
// round.
func (h *Hub) catchUp(p *page) {
	defer h.wg.Done()
	select {
	case h.sem <- struct{}{}:
		defer func() { <-h.sem }()
	case <-h.ctx.Done():
		h.mu.Lock()
		p.running = false
		h.mu.Unlock()
		return
	}
	for {
		h.mu.Lock()
		if !p.dirty || p.removed || h.closed {
			p.running = false
			h.mu.Unlock()
			return
		}
		p.dirty = false
		from := p.cursor
		h.mu.Unlock()

		h.logReads.Add(1)
		lctx, cancel := context.WithTimeout(h.ctx, queryTimeout)
		entries, err := h.st.Log(lctx, p.id, from, batchSize)
		cancel()

		h.mu.Lock()
		if err != nil {
			p.running = false // the next notification or poll retries
			h.mu.Unlock()
			if h.ctx.Err() == nil {
				h.log.Warn("dispatch: catch-up", "page", p.id, "after", from, "err", err)
			}
			return
		}
		if !p.removed {
			h.fanoutLocked(p, entries)
		}
		if len(entries) == batchSize {
			p.dirty = true
		}
		h.mu.Unlock()
	}
}

// fanoutLocked hands entries (in seq order, from cursor+1) to the page's
// live subscribers and advances the cursor. Each subscriber takes its
// whole share before the next one, so that a server writing to sockets
// finds a burst of events queued together (one write, not one per
// event).
func (h *Hub) fanoutLocked(p *page, entries []store.Entry) {
	for len(entries) > 0 && entries[0].Seq <= p.cursor {
		entries = entries[1:]
	}
	n := 0
	for n < len(entries) && entries[n].Seq == p.cursor+1+int64(n) {
		n++
	}
	if n < len(entries) {
		h.log.Error("dispatch: gap in page log", "page", p.id, "cursor", p.cursor+int64(n), "seq", entries[n].Seq)
	}
	if run := entries[:n]; n > 0 {
		evs := make([]*Event, n) // shared by the subscribers, made on first use
		// Backwards, so that closeLocked's swap-remove moves an already
		// visited subscriber into slot i.
		for i := len(p.subs) - 1; i >= 0; i-- {
			s := p.subs[i]
			if s.replaying {
				continue
			}
			for k, e := range run {
				if s.next > e.Seq {
					continue
				}
				if s.next < e.Seq { // impossible: live subscribers have next > cursor
					h.log.Error("dispatch: live subscriber behind the cursor", "page", p.id, "next", s.next, "seq", e.Seq)
					s.closeLocked(ErrSlow)
					break
				}
				if evs[k] == nil {
					evs[k] = &Event{PageID: p.id, Entry: e}
				}
				if !s.deliverLocked(evs[k]) {
					s.closeLocked(ErrSlow)
					break
				}
				s.next++
			}
		}
		p.cursor = run[n-1].Seq
	}
	if p.target < p.cursor {
		p.target = p.cursor
	}
	if p.cursor >= p.target {
		p.pendingSince = time.Time{}
	}
}

// deliverLocked hands a live event to s without blocking: false if s is
// behind.
func (s *Subscription) deliverLocked(ev *Event) bool {
	if s.sink != nil {
		return s.sink.Live(ev)
	}
	select {
	case s.ch <- ev:
		return true
	default:
		return false
	}
}
