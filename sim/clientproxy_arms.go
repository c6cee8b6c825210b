package sim

import (
	"context"
	"slices"
	"sync"
)

// What the kit, acting as another user of a foreign window's page
// (adversary.go), arms in the window's proxy: faults aimed at one command
// rather than drawn, so that the server decides against the client and
// the client is left without the answer when the seed says so.
// codeRefused is the code of the rejection a refused post is, for the
// client (spec/window.md, Refusals: reject {id, code: refused}).
const codeRefused = "refused"

type proxyArms struct {
	hold    map[string]*heldPost // command id -> its next post is held
	lose    map[string]*lostPost // command id -> the answer to its next post is lost
	block   map[string]bool      // posts of these ids are answered 503 until a kb.page
	dropCmd map[string]bool      // the next echo of these command ids is dropped
	// with dropCmd: every copy of the echo after the dropped one (other
	// subscriptions of the page) is dropped too, until the client
	// subscribes again (lost sets it)
	dropAll map[string]bool
	lostCmd map[string]bool
	dupCmd  map[string]bool       // the next echo of these command ids is written twice
	lateCmd map[string]bool       // the next echo of these command ids is written after the event that follows it
	seen    map[string]chan int64 // command id -> gets the seq of its next echo, written or dropped
	refused map[string]*refusals  // command id -> its blocked posts, counted
	// Every post of these command ids is answered 400 BAD_REQUEST, not
	// forwarded: the envelope refused, final (spec/window.md, Refusals).
	// Kept through disarm: a resend gets the same answer.
	refuse map[string]bool
}

// refusals counts the posts of one id answered 503 while it is blocked;
// done is closed at the count wanted, or once the block is lifted.
type refusals struct {
	left int
	done chan struct{}
	once sync.Once
}

func (r *refusals) end() { r.once.Do(func() { close(r.done) }) }

type heldPost struct {
	held, release         chan struct{}
	heldOnce, releaseOnce sync.Once
}

func (h *heldPost) free() { h.releaseOnce.Do(func() { close(h.release) }) }

type lostPost struct {
	block bool          // then block its retries until a kb.page (or unblock)
	lost  chan struct{} // closed once the answer was lost
}

// armHold holds id's next post at the proxy (recorded, not forwarded)
// until release is called; held is closed once the post is held.
func (p *clientProxy) armHold(id string) (held <-chan struct{}, release func()) {
	h := &heldPost{held: make(chan struct{}), release: make(chan struct{})}
	p.mu.Lock()
	if p.adv.hold == nil {
		p.adv.hold = map[string]*heldPost{}
	}
	p.adv.hold[id] = h
	p.mu.Unlock()
	return h.held, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.adv.hold[id] == h {
			delete(p.adv.hold, id)
		}
		h.free()
	}
}

// holdIfArmed blocks a post of id while a hold on it is armed.
func (p *clientProxy) holdIfArmed(ctx context.Context, id string) {
	p.mu.Lock()
	h := p.adv.hold[id]
	p.mu.Unlock()
	if h == nil {
		return
	}
	h.heldOnce.Do(func() { close(h.held) })
	select {
	case <-h.release:
	case <-ctx.Done():
	case <-p.ctx.Done():
	}
}

// armLose loses the answer to id's next post (the server decides it; the
// client never hears); with block, its retries are answered 503 until
// the client calls kb.page or unblock is called. lost is closed once
// the answer was lost.
func (p *clientProxy) armLose(id string, block bool) (lost <-chan struct{}) {
	l := &lostPost{block: block, lost: make(chan struct{})}
	p.mu.Lock()
	if p.adv.lose == nil {
		p.adv.lose = map[string]*lostPost{}
	}
	p.adv.lose[id] = l
	p.mu.Unlock()
	return l.lost
}

// forcedLoss reports whether the answer to a post of one of ids is armed
// to be lost.
func (p *clientProxy) forcedLoss(ids []string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.ContainsFunc(ids, func(id string) bool { return p.adv.lose[id] != nil })
}

// lostNow takes the arms of ids whose answer was just lost.
func (p *clientProxy) lostNow(ids []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range ids {
		if l := p.adv.lose[id]; l != nil {
			delete(p.adv.lose, id)
			if l.block {
				if p.adv.block == nil {
					p.adv.block = map[string]bool{}
				}
				p.adv.block[id] = true
			}
			close(l.lost)
		}
	}
}

func (p *clientProxy) blocked(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.adv.block[id] {
		return false
	}
	if r := p.adv.refused[id]; r != nil {
		if r.left--; r.left <= 0 {
			r.end()
		}
	}
	return true
}

// armRefused reports, by closing the channel it returns, when n posts of
// id were refused while it is blocked (armLose), or when the block was
// lifted first.
func (p *clientProxy) armRefused(id string, n int) <-chan struct{} {
	r := &refusals{left: n, done: make(chan struct{})}
	p.mu.Lock()
	if p.adv.refused == nil {
		p.adv.refused = map[string]*refusals{}
	}
	p.adv.refused[id] = r
	p.mu.Unlock()
	return r.done
}

// unblock lets blocked retries through again (a kb.page call: the client
// learns the outcome; or the kit's next step: the instance is back).
func (p *clientProxy) unblock() {
	p.mu.Lock()
	p.adv.block = nil
	refused := p.adv.refused
	p.adv.refused = nil
	p.mu.Unlock()
	for _, r := range refused {
		r.end()
	}
}

// armDrop drops the next echo of command id on the client's sockets.
func (p *clientProxy) armDrop(id string) {
	p.mu.Lock()
	if p.adv.dropCmd == nil {
		p.adv.dropCmd = map[string]bool{}
	}
	p.adv.dropCmd[id] = true
	p.mu.Unlock()
}

// armDropCopies drops the next echo of command id and every copy of it
// (on another subscription of the page) until the client sends a
// kb.onPage subscription after it: the echo is lost, and only a
// resubscribe asks for it again.
func (p *clientProxy) armDropCopies(id string) {
	p.armDrop(id)
	p.mu.Lock()
	if p.adv.dropAll == nil {
		p.adv.dropAll = map[string]bool{}
	}
	p.adv.dropAll[id] = true
	p.mu.Unlock()
}

// subscribed ends the copies dropped by armDropCopies: a subscription
// the client sent after the loss gets the echo.
func (p *clientProxy) subscribed() {
	p.mu.Lock()
	p.adv.lostCmd = nil
	p.mu.Unlock()
}

func (p *clientProxy) dropArmed(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if id == "" {
		return false
	}
	if p.adv.lostCmd[id] {
		return true
	}
	if !p.adv.dropCmd[id] {
		return false
	}
	delete(p.adv.dropCmd, id)
	if p.adv.dropAll[id] {
		if p.adv.lostCmd == nil {
			p.adv.lostCmd = map[string]bool{}
		}
		p.adv.lostCmd[id] = true
	}
	return true
}

// armDup writes the next echo of command id to the client twice (a
// duplicate the kit aims rather than draws).
func (p *clientProxy) armDup(id string) {
	p.mu.Lock()
	if p.adv.dupCmd == nil {
		p.adv.dupCmd = map[string]bool{}
	}
	p.adv.dupCmd[id] = true
	p.mu.Unlock()
}

func (p *clientProxy) dupArmed(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if id == "" || !p.adv.dupCmd[id] {
		return false
	}
	delete(p.adv.dupCmd, id)
	return true
}

// armLate holds the next echo of command id back until the next event
// on the same socket, then writes the two swapped (a reorder the kit
// aims rather than draws); with no next event within adversaryWait it
// is written alone.
func (p *clientProxy) armLate(id string) {
	p.mu.Lock()
	if p.adv.lateCmd == nil {
		p.adv.lateCmd = map[string]bool{}
	}
	p.adv.lateCmd[id] = true
	p.mu.Unlock()
}

func (p *clientProxy) lateArmed(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if id == "" || !p.adv.lateCmd[id] {
		return false
	}
	delete(p.adv.lateCmd, id)
	return true
}

// armSeen reports, on the channel it returns, the seq of the next echo
// of command id the proxy passes on the client's sockets (written, or
// dropped by a fault: either way the client has had its chance).
func (p *clientProxy) armSeen(id string) <-chan int64 {
	ch := make(chan int64, 1)
	p.mu.Lock()
	if p.adv.seen == nil {
		p.adv.seen = map[string]chan int64{}
	}
	p.adv.seen[id] = ch
	p.mu.Unlock()
	return ch
}

// passed notes that an echo of command id at seq went by.
func (p *clientProxy) passed(id string, seq int64) {
	if id == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if ch := p.adv.seen[id]; ch != nil {
		delete(p.adv.seen, id)
		ch <- seq
	}
}

// armRefuse answers every post of command id 400 BAD_REQUEST from now
// on, without forwarding it.
func (p *clientProxy) armRefuse(id string) {
	p.mu.Lock()
	if p.adv.refuse == nil {
		p.adv.refuse = map[string]bool{}
	}
	p.adv.refuse[id] = true
	p.mu.Unlock()
}

func (p *clientProxy) refusing(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.adv.refuse[id]
}

// disarm clears every arm but the refusals and releases every held post
// (quiesce).
func (p *clientProxy) disarm() {
	p.mu.Lock()
	holds, refused := p.adv.hold, p.adv.refused
	p.adv = proxyArms{refuse: p.adv.refuse}
	p.mu.Unlock()
	for _, h := range holds {
		h.free()
	}
	for _, r := range refused {
		r.end()
	}
}
