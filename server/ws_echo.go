package server

import (
	"sync/atomic"

	"github.com/subspace/kbkit/internal/wsframe"
	"github.com/subspace/kbkit/server/dispatch"
	"github.com/subspace/kbkit/server/store"
	"github.com/subspace/kbkit/wire"
)

// A window that sends its commands on its socket (spec/PROTOCOL.md
// section 5.1) gets two messages per command there: the reply and, on
// its kb.onPage subscription, the command's event. The hub delivers the
// events of a group transaction once the next transaction is sent (the
// store's late hooks), so reply and event would go out in two writes on
// the server and be two reads in the client. Instead, the reply to a
// committed command carries on with the events the socket's subscription
// of the page is owed from its transaction: what the transaction logged
// on the page (store.Outcome.PageLog: the commands decided before and
// after it in its group too, so that on a hot page each socket gets one
// write per group), queued right after the reply when they
// follow the subscription's last seq without a gap. The hub's delivery of
// the same seqs then finds them queued (wsSub.Live skips a seq at or below
// the subscription's last). Nothing is held back: without a subscription
// of the page, or with a gap, the reply goes alone and the hub sends the
// events.

// wsEchoes counts the events queued with a reply.
var wsEchoes atomic.Int64

// committedCommand is kb.command's answer with the page it was on and
// what its transaction logged there as events (store.Outcome.PageMemo
// with pageEvents: made once per transaction and page, so that the
// sockets answered for one group share the events and their encoding;
// read only by the WebSocket's reply); its JSON is the
// wire.CommandResult's.
type committedCommand struct {
	wire.CommandResult
	page   string
	events func(page string, make func(string, []store.Entry) any) any
}

// pageEvents makes a transaction's entries on a page into events, whose
// wire form (dispatch.Event.Wire) each encodes once for every socket.
func pageEvents(page string, log []store.Entry) any {
	evs := make([]*dispatch.Event, len(log))
	for i := range log {
		evs[i] = &dispatch.Event{PageID: page, Entry: log[i]}
	}
	return evs
}

// answerCommand queues the reply to a committed kb.command call, and the
// events its socket's subscription of the page is owed from the
// command's transaction.
func (c *wsConn) answerCommand(m wsMessage, r committedCommand) {
	msg := outMsg{op: wsframe.OpText, a: commandReply(m, r.CommandResult)}
	if msg.a == nil {
		msg.a = c.encode(wsResponse{ID: m.ID, JSONRPC: m.JSONRPC, Result: &wsResult{Type: "data", Data: r.CommandResult}})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// Queued without starting the writer: the worker writes them itself
	// once its queue is empty (worker), as a closed loop's command leaves
	// it, or starts the writer before its next request.
	if !c.queueLocked(msg) {
		return
	}
	var evs []*dispatch.Event // read from the outcome once a subscription wants them
	for _, sub := range c.subs {
		if sub.path != wire.PathOnPage || sub.pageID != r.page || !sub.started || sub.ended || sub.dropped || sub.hs == nil {
			continue
		}
		if evs == nil && r.events != nil {
			evs, _ = r.events(r.page, pageEvents).([]*dispatch.Event)
		}
		for _, ev := range evs {
			if ev.Seq <= sub.last {
				continue
			}
			if ev.Seq != sub.last+1 {
				break // a gap: the hub sends the rest
			}
			c.queueLocked(outMsg{op: wsframe.OpText, event: true, a: sub.prefix, b: ev.Wire(encodePageEvent)})
			sub.last = ev.Seq
			wsEchoes.Add(1)
		}
	}
}

// commandReply is the reply to a committed kb.command call as
// c.encode writes it, without reflection, for the usual request id (a
// number); nil otherwise.
func commandReply(m wsMessage, r wire.CommandResult) []byte {
	if m.JSONRPC != "" || len(m.ID) == 0 || len(m.ID) > 18 {
		return nil
	}
	for _, ch := range m.ID {
		if ch < '0' || ch > '9' {
			return nil
		}
	}
	b := make([]byte, 0, 64)
	b = append(b, `{"id":`...)
	b = append(b, m.ID...)
	b = appendCommandData(append(b, `,"result":{"type":"data","data":`...), r)
	return append(b, `}}`...)
}
