package server

import (
	"sync"
	"time"
)

// maxBuckets bounds a bucketMap: past it the map starts again empty (every
// key's bucket full again), so that a stream of distinct keys costs bounded
// memory instead of one bucket each forever.
const maxBuckets = 100000

// bucketMap keeps one token bucket per key: a bucket starts full with size
// tokens and gains rate tokens per period, up to size. It is safe for
// concurrent use.
type bucketMap struct {
	size   float64
	rate   float64
	period time.Duration
	now    func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newBucketMap(size, rate float64, period time.Duration, now func() time.Time) *bucketMap {
	return &bucketMap{size: size, rate: rate, period: period, now: now, buckets: map[string]*bucket{}}
}

// refill is key's bucket with the tokens gained since its last use; the
// caller holds m.mu.
func (m *bucketMap) refill(key string) *bucket {
	now := m.now()
	b, ok := m.buckets[key]
	if !ok {
		if len(m.buckets) > maxBuckets {
			m.buckets = map[string]*bucket{}
		}
		b = &bucket{tokens: m.size, last: now}
		m.buckets[key] = b
	}
	b.tokens = min(m.size, b.tokens+float64(now.Sub(b.last))/float64(m.period)*m.rate)
	b.last = now
	return b
}

// take answers ok when key's bucket holds a whole token, and then takes it
// if spend; otherwise it answers the time until the bucket holds one.
func (m *bucketMap) take(key string, spend bool) (ok bool, wait time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.refill(key)
	if b.tokens >= 1 {
		if spend {
			b.tokens--
		}
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / m.rate * float64(m.period))
}

// spend takes one token of key's bucket, or what is left of one.
func (m *bucketMap) spend(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.refill(key)
	b.tokens = max(0, b.tokens-1)
}
