package editor

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/kbcore"
)

// Sample names: the latencies (metrics.Commit, Echo, Fanout,
// Convergence) and the counts below.
const (
	Rejection = "rejection" // the server rejected a command (Code)
	Error     = "error"     // something failed (Kind)
	Refetch   = "refetch"   // a window refetched its page after a gap
	Reconnect = "reconnect" // a window's subscription was opened again
)

// Sample is one measurement of a window, as a Tap sees it.
type Sample struct {
	// Name is metrics.Commit, metrics.Echo, metrics.Fanout or
	// metrics.Convergence (Latency set), or Rejection, Error, Refetch or
	// Reconnect (a count of one).
	Name    string
	At      time.Time
	Latency time.Duration
	// Workload names what drew the command (or, for a window's own
	// samples, its last command); Type is the command's type, for the
	// samples of a command.
	Workload string
	Type     string
	Code     string // a rejection's code
	Kind     string // an error's kind (ErrorKind)
	// Origin is the window that issued the command, for echo and
	// fan-out.
	Origin *Window
}

// Tap receives every sample of a window, on the window's reader goroutine
// or the caller's; it must be safe for concurrent use.
type Tap func(Sample)

// ErrorKind names the kind of a failure for the metrics: the server's
// error code, timeout (a deadline that passed, or a network operation
// that timed out), canceled, or network.
func ErrorKind(err error) string {
	var ce *client.Error
	var ne net.Error
	switch {
	case errors.As(err, &ce):
		return ce.Code
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "network"
}

// Session is what the measured windows of one process share.
type Session struct {
	mu    sync.Mutex
	pages map[string]*Page
	wins  []*Window
	// titles are the pages' known titles in the order they became known
	// (copied on write: readers keep the slice they got); titleAt indexes
	// them by page id.
	titles  []string
	titleAt map[string]int

	stamps    sync.Map // command id -> *stamp
	swept     atomic.Int64
	measuring atomic.Bool
}

// NewSession returns an empty session, measuring.
func NewSession() *Session {
	s := &Session{pages: map[string]*Page{}, titleAt: map[string]int{}}
	s.measuring.Store(true)
	return s
}

// SetMeasuring sets whether what starts from now on is measured: a
// command counts (its outcome and its echoes) only if it started while
// measuring, so that a warm-up can be forgotten.
func (s *Session) SetMeasuring(on bool) { s.measuring.Store(on) }

// Measuring reports whether the session measures.
func (s *Session) Measuring() bool { return s.measuring.Load() }

// Page is one page as the session's windows see it.
type Page struct {
	ID   string
	head atomic.Int64 // the highest seq seen here
	wins []*Window    // the session's open windows on it (Session.mu)
}

// Saw records that the page has seq.
func (p *Page) Saw(seq int64) {
	for {
		h := p.head.Load()
		if seq <= h || p.head.CompareAndSwap(h, seq) {
			return
		}
	}
}

// Head is the highest seq of the page seen here.
func (p *Page) Head() int64 { return p.head.Load() }

// Page returns the session's page id, adding it.
func (s *Session) Page(id string) *Page {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pageLocked(id)
}

func (s *Session) pageLocked(id string) *Page {
	p := s.pages[id]
	if p == nil {
		p = &Page{ID: id}
		s.pages[id] = p
	}
	return p
}

// SetTitle records page id's current title.
func (s *Session) SetTitle(id, title string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.titleAt[id]
	if !ok {
		i = len(s.titles)
		s.titleAt[id] = i
	}
	s.titles = append(append([]string(nil), s.titles...), "")[:max(len(s.titles), i+1)]
	s.titles[i] = title
}

// AddTitle records page id's title unless one is known already (a rename
// seen here is newer than a layout's title).
func (s *Session) AddTitle(id, title string) {
	s.mu.Lock()
	_, ok := s.titleAt[id]
	s.mu.Unlock()
	if !ok {
		s.SetTitle(id, title)
	}
}

// Titles are the pages' current titles, those known here, for links; the
// caller must not modify them.
func (s *Session) Titles() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.titles
}

// Windows are the session's open windows, in the order they opened.
func (s *Session) Windows() []*Window {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Window(nil), s.wins...)
}

func (s *Session) windowsOn(p *Page) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(p.wins)
}

// stamp is a command in flight: when and by which window it was issued,
// until every window of its page here has applied it. left counts the
// page's windows when it was issued; a window opened since may apply it
// too, so the stamp goes only once the origin applied it as well (sweep
// takes what is left).
type stamp struct {
	start    time.Time
	origin   *Window
	workload string
	measured bool
	left     atomic.Int32
	echoed   atomic.Bool
}

// sweep forgets, every ten seconds, the stamps no window will apply any
// more (a window closed before the echo, a gap filled by a snapshot).
func (s *Session) sweep(now time.Time) {
	last := s.swept.Load()
	if now.UnixNano()-last < int64(10*time.Second) || !s.swept.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	s.stamps.Range(func(k, v any) bool {
		if now.Sub(v.(*stamp).start) > time.Minute {
			s.stamps.Delete(k)
		}
		return true
	})
}

// Diverged compares, page by page, the documents of the windows at the
// seq of the page's first window: each one that differs records a
// diverged error. It returns how many did.
func (s *Session) Diverged() int {
	s.mu.Lock()
	var groups [][]*Window
	for _, p := range s.pages {
		if len(p.wins) > 1 {
			groups = append(groups, append([]*Window(nil), p.wins...))
		}
	}
	s.mu.Unlock()
	n := 0
	for _, ws := range groups {
		ref, refSeq := ws[0].cw.Server()
		for _, w := range ws[1:] {
			if doc, seq := w.cw.Server(); seq == refSeq && !ref.Equal(doc) {
				n++
				w.fail("diverged", time.Now())
			}
		}
	}
	return n
}

// titleOf is the title a rename-page sets, if it sets one.
func titleOf(c kbcore.Command) (string, bool) {
	if c.Type != kbcore.TypeRenamePage {
		return "", false
	}
	var p kbcore.RenamePage
	if json.Unmarshal(c.Payload, &p) != nil || p.Title == nil {
		return "", false
	}
	return *p.Title, true
}
