package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/subspace/kbkit/wire"

	"github.com/subspace/kbkit/internal/wsframe"
	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/server/dispatch"
	"github.com/subspace/kbkit/server/store"
)

// subscribe starts a kb.onPage or kb.onInvalidate subscription: it answers
// {type: "started"}, then its events follow.
func (c *wsConn) subscribe(m wsMessage, idKey string) *callError {
	c.mu.Lock()
	_, dup := c.subs[idKey]
	open := len(c.subs)
	c.mu.Unlock()
	if dup {
		return errorf(wire.CodeBadRequest, "Duplicate id %s", idKey)
	}
	if n := c.s.opts.Limits.MaxSubscriptionsPerSocket; n > 0 && open >= n {
		c.s.metrics.refused.WithLabelValues("subscriptions").Inc()
		return errorf(wire.CodeTooManyRequests, "%d subscriptions open on this socket: at most %d (stop one first)", open, n)
	}
	if !c.s.holdSubscription(c.dev.DeviceID) {
		c.s.metrics.refused.WithLabelValues("subscriptions").Inc()
		return errorf(wire.CodeTooManyRequests, "this device has %d subscriptions open on this server: stop one first", c.s.opts.Limits.MaxSubscriptionsPerDevice)
	}
	held := true
	defer func() {
		if held {
			c.s.releaseSubscription(c.dev.DeviceID)
		}
	}()
	if cerr := c.s.limiter.allow(c.dev.DeviceID); cerr != nil {
		return cerr
	}
	sub := &wsSub{c: c, key: idKey, id: m.ID, rpc: m.JSONRPC, path: m.Params.Path}
	switch m.Params.Path {
	case wire.PathOnPage:
		pageID, after, cerr := parseOnPage(m.Params.Input, m.Params.LastEventID)
		if cerr != nil {
			return cerr
		}
		ws, err := c.s.pageWorkspace(c.ctx, pageID)
		if err != nil || ws != c.dev.WorkspaceID {
			if err == nil {
				err = store.ErrForbidden
			}
			return storeError(err)
		}
		if c.s.hub == nil {
			return errorf(wire.CodeInternalServerError, "this server has no dispatcher: subscriptions are unavailable")
		}
		sub.pageID, sub.last, sub.prefix = pageID, after, eventPrefix(m)
		c.mu.Lock()
		if c.closing {
			c.mu.Unlock()
			return &callError{code: wire.CodeServiceUnavailable, message: "connection closing", retryable: true}
		}
		c.subs[idKey] = sub // its count is the subscription's from now on
		held = false
		c.mu.Unlock()
		hs, err := c.s.hub.SubscribeSink(c.ctx, pageID, after, sub)
		c.mu.Lock()
		slow := errors.Is(sub.failed, dispatch.ErrSlow) // behind already: resubscribed below
		if err == nil && sub.failed != nil && !slow {
			err = sub.failed
		}
		if err != nil {
			mine := !sub.ended
			if mine {
				sub.ended = true
				delete(c.subs, idKey)
			}
			c.mu.Unlock()
			if hs != nil {
				hs.Close()
			}
			if mine {
				c.s.releaseSubscription(c.dev.DeviceID)
			}
			if c.ctx.Err() != nil {
				return &callError{code: wire.CodeServiceUnavailable, message: "connection closing", retryable: true}
			}
			c.s.log.Warn("websocket: subscribe failed", "page_id", pageID, "err", err)
			return &callError{code: wire.CodeServiceUnavailable, message: "subscription unavailable, retry", retryable: true, retryAfter: time.Second}
		}
		if sub.ended { // the connection is ending
			c.mu.Unlock()
			hs.Close()
			return nil
		}
		if !sub.dropped {
			sub.hs = hs
		}
		c.enqueueLocked(outMsg{op: wsframe.OpText, a: c.encode(wsResponse{ID: m.ID, JSONRPC: m.JSONRPC, Result: &wsResult{Type: "started"}})})
		for _, e := range sub.early {
			c.enqueueLocked(e)
		}
		sub.early, sub.started, sub.failed = nil, true, nil
		if slow {
			c.slow = append(c.slow, sub)
			c.startWriterLocked()
		}
		c.signalRoomLocked()
		c.mu.Unlock()
		return nil
	case wire.PathOnInvalidate:
		topics, cerr := parseOnInvalidate(m.Params.Input)
		if cerr != nil {
			return cerr
		}
		var ctx context.Context
		ctx, sub.cancel = context.WithCancel(c.ctx)
		is := c.s.inval.subscribe(c.dev.WorkspaceID, topics)
		c.mu.Lock()
		if c.closing {
			c.mu.Unlock()
			sub.cancel()
			c.s.inval.unsubscribe(is)
			return &callError{code: wire.CodeServiceUnavailable, message: "connection closing", retryable: true}
		}
		c.subs[idKey] = sub
		sub.started = true
		c.enqueueLocked(outMsg{op: wsframe.OpText, a: c.encode(wsResponse{ID: m.ID, JSONRPC: m.JSONRPC, Result: &wsResult{Type: "started"}})})
		c.subWG.Add(1)
		c.mu.Unlock()
		held = false // the stream releases it
		go func() {
			defer c.subWG.Done()
			defer c.s.releaseSubscription(c.dev.DeviceID)
			defer func() {
				if p := recover(); p != nil {
					cerr := c.s.recovered("websocket subscription", p, "path", m.path(), "device_id", c.dev.DeviceID)
					c.send(wsResponse{ID: m.ID, JSONRPC: m.JSONRPC, Error: ptr(cerr.shape(m.path()))})
				}
				sub.cancel()
				c.mu.Lock()
				sub.ended = true
				if c.subs[idKey] == sub {
					delete(c.subs, idKey)
				}
				c.mu.Unlock()
			}()
			c.streamInvalidations(ctx, m, sub, is)
		}()
		return nil
	default:
		return errorf(wire.CodeNotFound, "No %q-procedure on path %q", m.Method, m.Params.Path)
	}
}

// Live implements dispatch.Sink: a live event of the page is queued.
// Called with the hub's lock held.
func (sub *wsSub) Live(ev *dispatch.Event) bool {
	c := sub.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if sub.ended || c.closing || ev.Seq <= sub.last {
		return true // the subscription is ending, or a replayed seq
	}
	if len(c.out)+len(sub.early) >= c.outCap {
		return false // behind: the hub ends it with ErrSlow
	}
	msg := outMsg{op: wsframe.OpText, event: true, a: sub.prefix, b: ev.Wire(encodePageEvent)}
	if sub.started {
		c.enqueueLocked(msg)
	} else {
		sub.early = append(sub.early, msg)
	}
	sub.last = ev.Seq
	return true
}

// Replay implements dispatch.Sink: an event read from the log is queued,
// once the queue has room.
func (sub *wsSub) Replay(ctx context.Context, ev *dispatch.Event) bool {
	c := sub.c
	for {
		c.mu.Lock()
		switch {
		case sub.ended || c.closing:
			c.mu.Unlock()
			return false
		case ev.Seq <= sub.last:
			c.mu.Unlock()
			return true
		case sub.started && len(c.out) < c.outCap:
			c.enqueueLocked(outMsg{op: wsframe.OpText, event: true, a: sub.prefix, b: ev.Wire(encodePageEvent)})
			sub.last = ev.Seq
			c.mu.Unlock()
			return true
		}
		if c.room == nil {
			c.room = make(chan struct{})
		}
		room := c.room
		c.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return false
		}
	}
}

// Ended implements dispatch.Sink: the hub ended the subscription. A slow
// one is resubscribed from its last seq once the queue is written (the
// client never sees it); any other end while the connection is up is
// answered with a retryable error. Possibly called with the hub's lock.
func (sub *wsSub) Ended(err error) {
	c := sub.c
	c.mu.Lock()
	defer c.mu.Unlock()
	sub.hs, sub.dropped = nil, true
	if sub.ended || c.closing {
		return
	}
	if !sub.started {
		sub.failed = err // subscribe handles it
		return
	}
	if errors.Is(err, dispatch.ErrSlow) {
		c.slow = append(c.slow, sub)
		c.startWriterLocked()
		return
	}
	sub.ended = true
	delete(c.subs, sub.key)
	if !c.draining.Load() {
		c.s.log.Warn("websocket: subscription ended", "path", sub.path, "err", err)
		c.enqueueLocked(outMsg{op: wsframe.OpText, a: c.encode(wsResponse{ID: sub.id, JSONRPC: sub.rpc, Error: ptr((&callError{code: wire.CodeServiceUnavailable,
			message: fmt.Sprintf("subscription ended (%v): subscribe again with the last event id", err), retryable: true}).shape(sub.path))})})
	}
	c.s.releaseSubscription(c.dev.DeviceID)
}

// resubscribe subscribes a slow subscription again after its last seq
// queued (the writer calls it once the queue is written).
func (c *wsConn) resubscribe(sub *wsSub) {
	c.mu.Lock()
	if sub.ended || c.closing {
		c.mu.Unlock()
		return
	}
	after := sub.last
	sub.dropped = false
	c.mu.Unlock()
	c.s.log.Debug("websocket: resubscribing a slow subscriber", "page_id", sub.pageID, "after", after)
	c.s.resubscribes.Add(1)
	hs, err := c.s.hub.SubscribeSink(c.ctx, sub.pageID, after, sub)
	c.mu.Lock()
	if err != nil {
		mine := !sub.ended && !c.closing
		if mine {
			sub.ended = true
			delete(c.subs, sub.key)
			if !c.draining.Load() {
				c.enqueueLocked(outMsg{op: wsframe.OpText, a: c.encode(wsResponse{ID: sub.id, JSONRPC: sub.rpc, Error: ptr((&callError{code: wire.CodeServiceUnavailable,
					message: fmt.Sprintf("subscription ended (%v): subscribe again with the last event id", err), retryable: true}).shape(sub.path))})})
			}
		}
		c.mu.Unlock()
		if mine {
			c.s.releaseSubscription(c.dev.DeviceID)
		}
		return
	}
	if sub.ended || c.closing {
		c.mu.Unlock()
		hs.Close()
		return
	}
	if !sub.dropped {
		sub.hs = hs
	}
	c.mu.Unlock()
}

func (c *wsConn) streamInvalidations(ctx context.Context, m wsMessage, sub *wsSub, is *invSub) {
	defer c.s.inval.unsubscribe(is)
	for {
		select {
		case inv := <-is.ch:
			if !c.send(wsResponse{ID: m.ID, JSONRPC: m.JSONRPC, Result: &wsResult{Type: "data", Data: inv}}) {
				return
			}
		case <-ctx.Done():
			switch {
			case sub.stopped.Load():
				c.send(wsResponse{ID: m.ID, JSONRPC: m.JSONRPC, Result: &wsResult{Type: "stopped"}})
			case c.ctx.Err() != nil || c.draining.Load():
			}
			return
		}
	}
}

// A kb.onPage event goes out as {"id":<request id>[,"jsonrpc":...],
// "result":{"type":"data","id":"<seq>","data":{"cmd":...,"seq":...}}}: the
// part from "result" on is the same for every subscriber of the page, so
// it is encoded once per event (dispatch.Event.Wire) and only the short
// prefix of each subscription is prepended; no JSON work per subscriber.

// eventPrefix is a subscription's part of its event messages.
func eventPrefix(m wsMessage) []byte {
	b := append([]byte(`{"id":`), bytes.TrimSpace(m.ID)...)
	if m.JSONRPC != "" {
		v, _ := json.Marshal(m.JSONRPC)
		b = append(append(append(b, `,"jsonrpc":`...), v...), ',')
	} else {
		b = append(b, ',')
	}
	return b
}

// encodePageEvent is an event's shared part,
// `"result":{"type":"data","id":"<seq>","data":<data>}}`, the data
// {cmd, seq} in canonical JSON (spec/PROTOCOL.md 4.4; the logged payload
// already is).
func encodePageEvent(ev *dispatch.Event) []byte {
	seq := strconv.FormatInt(ev.Seq, 10)
	b := make([]byte, 0, 96+len(ev.Cmd.ID)+len(ev.Cmd.Type)+len(ev.Cmd.Payload))
	b = append(b, `"result":{"type":"data","id":"`...)
	b = append(b, seq...)
	b = append(b, `","data":{"cmd":`...)
	b = kbcore.AppendCommand(b, ev.Cmd)
	b = append(b, `,"seq":`...)
	b = append(b, seq...)
	return append(b, `}}}`...)
}

// holdSubscription counts one more subscription of the device, or false
// past Limits.MaxSubscriptionsPerDevice.
func (s *Server) holdSubscription(device string) bool {
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	if n := s.opts.Limits.MaxSubscriptionsPerDevice; n > 0 && s.subsByDev[device] >= n {
		return false
	}
	s.subsByDev[device]++
	return true
}

func (s *Server) releaseSubscription(device string) {
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	if s.subsByDev[device]--; s.subsByDev[device] <= 0 {
		delete(s.subsByDev, device)
	}
}
