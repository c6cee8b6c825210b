package taskpool

import (
	"sync"
	"sync/atomic"
)

// Pool parks at most max goroutines; a task that finds none parked gets a
// goroutine of its own. Close ends every parked goroutine; tasks given
// after it still run, each on a goroutine that ends with it.
type Pool struct {
	tasks  chan func() // unbuffered: a send succeeds only to a parked goroutine
	parked atomic.Int32
	given  atomic.Int64 // tasks given (Go), for tests and diagnosis
	max    int32
	done   chan struct{}
	once   sync.Once
}

// New returns a pool that parks at most max goroutines (at least 0).
func New(max int) *Pool {
	return &Pool{tasks: make(chan func()), max: int32(max), done: make(chan struct{})}
}

// Go runs f on a parked goroutine, or on a new one when none is parked.
func (p *Pool) Go(f func()) {
	p.given.Add(1)
	select {
	case p.tasks <- f:
	default:
		go p.run(f)
	}
}

func (p *Pool) run(f func()) {
	for {
		f()
		if p.parked.Add(1) > p.max {
			p.parked.Add(-1)
			return
		}
		select {
		case f = <-p.tasks:
			p.parked.Add(-1)
		case <-p.done:
			p.parked.Add(-1)
			return
		}
	}
}

// Given is the number of tasks given to Go so far.
func (p *Pool) Given() int64 { return p.given.Load() }

// Parked is the number of goroutines waiting for a task.
func (p *Pool) Parked() int { return int(p.parked.Load()) }

// Close ends the parked goroutines, and those that finish a task later;
// it may be called more than once.
func (p *Pool) Close() { p.once.Do(func() { close(p.done) }) }
