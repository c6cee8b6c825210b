package sim

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/subspace/kbkit/sim/internal/wsrelay"

	"github.com/coder/websocket"
)

// websocket proxies one /trpc WebSocket of the foreign client: the
// client's subscriptions are recorded (page, lastEventId) on the way up;
// the server's tracked events go down through the seed's echo faults.
func (p *clientProxy) websocket(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	down, up, ok := wsrelay.Pair(ctx, w, r, *p.upstream())
	if !ok {
		return
	}
	p.mu.Lock()
	p.socks[down] = true
	p.mu.Unlock()
	p.wg.Add(1)
	defer p.wg.Done()
	defer func() {
		p.mu.Lock()
		delete(p.socks, down)
		p.mu.Unlock()
	}()
	defer down.CloseNow()
	defer up.CloseNow()
	up.SetReadLimit(64 << 20)
	down.SetReadLimit(64 << 20)

	var subsMu sync.Mutex
	subs := map[string]string{} // subscription id -> page
	// Client to server: every subscription it opens is recorded.
	go wsrelay.RelayUp(ctx, cancel, down, up, func(b []byte) []byte {
		for _, m := range subscriptions(b) {
			subsMu.Lock()
			subs[string(m.id)] = m.page
			subsMu.Unlock()
			p.record(proxyRec{kind: recSubscribe, page: m.page, after: m.after, hasAfter: m.hasAfter})
			p.subscribed()
		}
		return b
	})
	msgs := wsrelay.ServerMessages(ctx, up)
	var held *wsrelay.Event
	pageOf := func(ev wsrelay.Event) string {
		subsMu.Lock()
		defer subsMu.Unlock()
		return subs[string(ev.Sub)]
	}
	write := func(evs ...wsrelay.Event) bool {
		for _, ev := range evs {
			// Recorded before the write: the client may act on it (a
			// refetch) before Write returns.
			p.record(proxyRec{kind: recDeliver, page: pageOf(ev), seq: ev.Seq, cmdID: ev.CmdID})
			if down.Write(ctx, websocket.MessageText, ev.Encode()) != nil {
				return false
			}
			p.passed(ev.CmdID, ev.Seq)
		}
		return true
	}
	flush := func() bool {
		if held == nil {
			return true
		}
		ev := *held
		held = nil
		return write(ev)
	}
	hold := wsrelay.FlushAfter // how long a held event waits for the next one
	idle := time.NewTimer(time.Hour)
	defer idle.Stop()
	for {
		select {
		case b, ok := <-msgs:
			if !ok {
				flush()
				return
			}
			ev, isEvent := wsrelay.ParseEvent(b)
			switch {
			case !isEvent:
				if !flush() || down.Write(ctx, websocket.MessageText, b) != nil {
					return
				}
			case p.dropArmed(ev.CmdID):
				p.record(proxyRec{kind: recDrop, page: pageOf(ev), seq: ev.Seq, cmdID: ev.CmdID})
				p.passed(ev.CmdID, ev.Seq)
			case p.lateArmed(ev.CmdID):
				if !flush() {
					return
				}
				held, hold = &ev, adversaryWait
			case p.dupArmed(ev.CmdID):
				p.record(proxyRec{kind: recDup, page: pageOf(ev), seq: ev.Seq})
				if !flush() || !write(ev, ev) {
					return
				}
			case held != nil:
				h := *held
				held = nil
				p.record(proxyRec{kind: recReorder, page: pageOf(ev), seq: ev.Seq, after: h.Seq})
				if !write(ev, h) {
					return
				}
			case p.chance(p.faults.Drop):
				p.record(proxyRec{kind: recDrop, page: pageOf(ev), seq: ev.Seq, cmdID: ev.CmdID})
				p.passed(ev.CmdID, ev.Seq)
			case p.chance(p.faults.Reorder):
				held = &ev
			case p.chance(p.faults.Duplicate):
				p.record(proxyRec{kind: recDup, page: pageOf(ev), seq: ev.Seq})
				if !write(ev, ev) {
					return
				}
			default:
				if !write(ev) {
					return
				}
			}
			idle.Reset(hold)
			hold = wsrelay.FlushAfter
		case <-idle.C:
			if !flush() {
				return
			}
			idle.Reset(time.Hour)
		case <-ctx.Done():
			return
		}
	}
}

// subscription is a kb.onPage subscription a client asked for.
type subscription struct {
	id       json.RawMessage
	page     string
	after    int64
	hasAfter bool
}

// subscriptions reads the kb.onPage subscriptions in a client message (a
// message or an array of them, spec/PROTOCOL.md 5.1); lastEventId in
// params overrides one in input.
func subscriptions(b []byte) []subscription {
	type msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Path  string `json:"path"`
			Input struct {
				PageID      string          `json:"page_id"`
				LastEventID json.RawMessage `json:"lastEventId"`
			} `json:"input"`
			LastEventID json.RawMessage `json:"lastEventId"`
		} `json:"params"`
	}
	var ms []msg
	if json.Unmarshal(b, &ms) != nil {
		var m msg
		if json.Unmarshal(b, &m) != nil {
			return nil
		}
		ms = []msg{m}
	}
	var out []subscription
	for _, m := range ms {
		if m.Method != "subscription" || m.Params.Path != "kb.onPage" {
			continue
		}
		s := subscription{id: m.ID, page: m.Params.Input.PageID}
		last := m.Params.Input.LastEventID
		if len(m.Params.LastEventID) > 0 && string(m.Params.LastEventID) != "null" {
			last = m.Params.LastEventID
		}
		if len(last) > 0 && string(last) != "null" {
			var str string
			if json.Unmarshal(last, &str) != nil {
				str = string(last)
			}
			if n, err := strconv.ParseInt(str, 10, 64); err == nil {
				s.after, s.hasAfter = n, true
			}
		}
		out = append(out, s)
	}
	return out
}
