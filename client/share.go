package client

import (
	"bytes"
	"sync"

	"github.com/subspace/kbkit/kbcore"
)

// The subscriptions of one process to one page receive the same bytes for
// each event (spec/PROTOCOL.md 4.4: a server sends an event as the same
// bytes to every subscriber, live or replayed; the request id of this
// client's subscriptions is always 1). The first subscription to receive
// an event decodes it and keeps it in the page's ring; the others find it
// there by its seq, compare the bytes and take the decoded event: one
// decode per event per process, not one per window. Equal bytes decode to
// equal events, so nothing a check could see changes: bytes that differ
// (another server, a broken one) are decoded on their own.
//
// Windows go one step further (window.go): the first to apply an event
// records the server document before and after it, and the others, whose
// document is that same value, take the result instead of applying the
// command again (kbcore.Window.EchoShared). The first applies it holding
// the event's lock, so that a window that reads the event meanwhile waits
// for the result instead of applying the command at the same time: two
// applications give equal documents that are not the same value, and
// bringing the windows back to one value (kbcore.Window.AdoptServer)
// compares whole documents.

// ringSize is how many recent events a page keeps: subscriptions of one
// page lag each other by a few events at most; one further behind just
// decodes again.
const ringSize = 32

// sharedEvent is one decoded event of a page.
type sharedEvent struct {
	seq int64
	raw []byte // the message as received
	ev  Event
	// private: the page's ring had a newer event in its slot (this
	// subscription is that far behind), so no other window finds it.
	private bool

	// mu guards the documents: prev is the server document a window had
	// before applying the event, next the one after (applied set).
	mu      sync.Mutex
	applied bool
	prev    kbcore.Doc
	next    kbcore.Doc
}

// apply returns the recorded application of the event (ok), or runs
// first, the window's own application, which returns the documents
// before and after it (applied: false if it applied nothing), and records
// them. Callers hold their window's lock; none holds e's while taking a
// window's.
func (e *sharedEvent) apply(first func() (prev, next kbcore.Doc, applied bool)) (prev, next kbcore.Doc, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.applied {
		return e.prev, e.next, true
	}
	if p, n, applied := first(); applied {
		e.prev, e.next, e.applied = p, n, true
	}
	return kbcore.Doc{}, kbcore.Doc{}, false
}

type pageShare struct {
	refs int // subscriptions and windows holding it (under sharesMu)
	mu   sync.Mutex
	ring [ringSize]*sharedEvent
	// The latest snapshot a window of the page took: the document as
	// the server wrote it, and as parsed.
	snapSet bool
	snapSeq int64
	snapRaw []byte
	snapDoc kbcore.Doc
}

// snapshot returns the document to hold for a snapshot of the page at
// seq whose document the server wrote as raw: the one another window
// holds for the same bytes (equal bytes parse to equal documents; the
// same value lets their echoes be applied once), or d.
func (p *pageShare) snapshot(seq int64, raw []byte, d kbcore.Doc) kbcore.Doc {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.snapSet && p.snapSeq == seq && bytes.Equal(p.snapRaw, raw) {
		return p.snapDoc
	}
	if !p.snapSet || seq >= p.snapSeq {
		p.snapSet, p.snapSeq, p.snapRaw, p.snapDoc = true, seq, raw, d
	}
	return d
}

var (
	sharesMu sync.Mutex
	shares   = map[string]*pageShare{}
)

// sharePage returns pageID's share, counting one more holder.
func sharePage(pageID string) *pageShare {
	sharesMu.Lock()
	defer sharesMu.Unlock()
	p := shares[pageID]
	if p == nil {
		p = &pageShare{}
		shares[pageID] = p
	}
	p.refs++
	return p
}

// releasePage drops a holder; the last one forgets the page.
func releasePage(pageID string, p *pageShare) {
	sharesMu.Lock()
	defer sharesMu.Unlock()
	if p.refs--; p.refs == 0 && shares[pageID] == p {
		delete(shares, pageID)
	}
}

// lookup returns the event seq if the page has it with exactly these
// bytes.
func (p *pageShare) lookup(seq int64, raw []byte) *sharedEvent {
	if seq <= 0 {
		return nil
	}
	p.mu.Lock()
	e := p.ring[seq%ringSize]
	p.mu.Unlock()
	if e != nil && e.seq == seq && bytes.Equal(e.raw, raw) {
		return e
	}
	return nil
}

// store keeps a decoded event and its bytes (raw, which the entry owns
// from now on) unless the ring holds a newer one in its slot, and returns
// the entry the event carries: the one another subscription stored
// meanwhile for the same bytes (both missed it in lookup and decoded),
// so that the page's windows still apply the event once.
func (p *pageShare) store(ev Event, raw []byte) *sharedEvent {
	e := &sharedEvent{seq: ev.Seq, raw: raw}
	ev.shared = e
	e.ev = ev
	slot := ev.Seq % ringSize
	if slot < 0 {
		e.private = true
		return e
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch old := p.ring[slot]; {
	case old == nil || old.seq < ev.Seq:
		p.ring[slot] = e
	case old.seq == ev.Seq && bytes.Equal(old.raw, raw):
		return old
	default:
		e.private = true
	}
	return e
}
