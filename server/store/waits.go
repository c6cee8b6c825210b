package store

import (
	"sync/atomic"
	"time"
)

// Where the command transactions' time goes (spec/PROTOCOL.md section 9):
// how many commands each transaction decided and by which path, how long
// commands queued for their page, how long a page was held and for what
// (Postgres round trips, planning between them, a group gathering its
// callers' next commands). The counters are cheap enough to stay on: a
// few clock reads and atomic adds per transaction.

// Path is how a command transaction ran.
type Path int

const (
	// PathOptimistic: a group planned against cached page heads, one round
	// trip (group.go).
	PathOptimistic Path = iota
	// PathUsual: a group that read heads and outcomes first, two round
	// trips.
	PathUsual
	// PathAlone: the single-command path (each attempt counts).
	PathAlone
	numPaths
)

func (p Path) String() string {
	return [...]string{"optimistic", "usual", "alone"}[p]
}

// SizeBuckets are the upper bounds of the transaction-size buckets of
// Waits.Sizes (commands decided by one transaction): 1, 2-3, 4-7, 8-15,
// 16-31, 32-63, 64 and more.
var SizeBuckets = []int{1, 3, 7, 15, 31, 63}

// Waits is a snapshot of the counters.
type Waits struct {
	// Transactions and the commands they decided, by Path.
	Transactions [numPaths]int64 `json:"transactions"`
	Commands     [numPaths]int64 `json:"commands"`
	// Sizes counts transactions by commands decided (SizeBuckets, and
	// one more for the rest).
	Sizes [7]int64 `json:"sizes"`
	// Queued is the number of commands that waited in the queue (their
	// page held by a running transaction, or every transaction slot
	// taken), QueueSeconds the time they waited.
	Queued       int64   `json:"queued"`
	QueueSeconds float64 `json:"queue_seconds"`
	// HoldSeconds is the time group rounds held their pages: their
	// transactions (TxSeconds) and their gathering (GatherSeconds).
	HoldSeconds   float64 `json:"hold_seconds"`
	GatherSeconds float64 `json:"gather_seconds"`
	// TxSeconds is the time of transactions by Path, from asking for a
	// connection to COMMIT's answer; PostgresSeconds the part of it spent
	// waiting for the pool and the round trips of BEGIN and COMMIT (of
	// every path), the rest being planning and writing the batch with
	// the page held (and any document read between them).
	TxSeconds       [numPaths]float64 `json:"tx_seconds"`
	PostgresSeconds float64           `json:"postgres_seconds"`
}

type waitCounters struct {
	tx, cmds, txNanos [numPaths]atomic.Int64
	sizes             [7]atomic.Int64
	queued, queueNanos,
	holdNanos, gatherNanos, pgNanos atomic.Int64
}

// Waits returns the counters.
func (s *Store) Waits() Waits {
	c := &s.waits
	var w Waits
	for p := range numPaths {
		w.Transactions[p] = c.tx[p].Load()
		w.Commands[p] = c.cmds[p].Load()
		w.TxSeconds[p] = secs(c.txNanos[p].Load())
	}
	for i := range w.Sizes {
		w.Sizes[i] = c.sizes[i].Load()
	}
	w.Queued = c.queued.Load()
	w.QueueSeconds = secs(c.queueNanos.Load())
	w.HoldSeconds = secs(c.holdNanos.Load())
	w.GatherSeconds = secs(c.gatherNanos.Load())
	w.PostgresSeconds = secs(c.pgNanos.Load())
	return w
}

func secs(n int64) float64 { return float64(n) / 1e9 }

// transaction records one transaction of path that decided n commands
// (n 0: it failed) in d, of which pg with Postgres.
func (c *waitCounters) transaction(path Path, n int, d, pg time.Duration) {
	c.tx[path].Add(1)
	c.cmds[path].Add(int64(n))
	c.txNanos[path].Add(int64(d))
	c.pgNanos.Add(int64(pg))
	if n > 0 {
		i := 0
		for i < len(SizeBuckets) && n > SizeBuckets[i] {
			i++
		}
		c.sizes[i].Add(1)
	}
}
