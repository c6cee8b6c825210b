// Package dispatch delivers committed commands to live subscribers: each
// server instance runs one Hub, which tails the store's log per page
// (woken by LISTEN/NOTIFY on store.NotifyChannel, with a periodic catch-up
// poll and a catch-up after every reconnect) and fans the entries out to
// its own subscribers in per-page seq order. Any number of instances may
// share one database; each delivers every committed command of a page to
// each of its subscribers exactly once, in seq order, without gaps.
//
// Usage:
//
//	hub := dispatch.New(st, dispatch.Logger(log))
//	go hub.Run(ctx) // until ctx is done; reconnects by itself
//
//	// In a request handler (for example an SSE stream):
//	sub, err := hub.Subscribe(r.Context(), pageID, lastEventID)
//	if err != nil { ... }
//	defer sub.Close()
//	for ev := range sub.C() {
//		write(ev.Seq, ev.Cmd) // ev is shared between subscribers: read only
//	}
//	switch err := sub.Err(); {
//	case errors.Is(err, dispatch.ErrSlow):
//		// The buffer overflowed: resubscribe after the last seq written
//		// (in process, or let the client reconnect with Last-Event-ID).
//	case errors.Is(err, dispatch.ErrClosed): // hub shut down or sub.Close
//	default: // the ctx given to Subscribe is done
//	}
//
// A subscription first replays the log after its seq (read by a short-lived
// goroutine of its own, with blocking sends, so a replay of any length fits
// any buffer), then turns live. Live delivery is a non-blocking send from
// the page's catch-up: a subscriber whose buffer is full is closed with
// ErrSlow and never delays the others. An idle live subscription is a small
// struct plus its channel (Buffer pointers, default 64 = 512 bytes) and no
// goroutine. A server with many subscribers per process can do without
// the channel too: SubscribeSink hands the events to a Sink (Live, with
// the hub's lock held and without blocking: false is ErrSlow; Replay,
// which may block; Ended, once), so that an idle subscription is the
// struct alone. Because live entries arrive in batches (one catch-up reads up
// to 1000 entries), a buffer smaller than a page's burst of commands makes
// even a fast reader ErrSlow; resubscribing after its last seq is cheap.
package dispatch
