package wiresuite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/coder/websocket"
)

func strp(s string) *string { return &s }

// ws dials a WebSocket with the Env's token in the Authorization header.
func (e *Env) ws(ctx context.Context) (*WS, error) {
	w, r, err := e.dialWS(ctx, wsHeader, "")
	if err != nil {
		if r != nil {
			return nil, e.setupFailed(setupSocket, r.fail("101 Switching Protocols", fmt.Sprintf("HTTP %d", r.Status), "the WebSocket upgrade was refused"))
		}
		return nil, err
	}
	return w, nil
}

func (w *WS) whoami(ctx context.Context, id any, ws, dev string) error {
	m, err := w.call(ctx, id, "query", "kb.whoami", nil)
	if err != nil {
		return err
	}
	data, err := w.data(m, "kb.whoami")
	if err != nil {
		return err
	}
	var d struct {
		WorkspaceID string `json:"workspace_id"`
		DeviceID    string `json:"device_id"`
	}
	if err := json.Unmarshal(data, &d); err != nil || d.WorkspaceID != ws || d.DeviceID != dev {
		return w.fail(fmt.Sprintf(`{"workspace_id":%q,"device_id":%q}`, ws, dev), excerpt(data, 200), "kb.whoami over the WebSocket")
	}
	return nil
}

func checkWSConnectionParams(ctx context.Context, e *Env) error {
	w, r, err := e.dialWS(ctx, wsParams, "")
	if err != nil {
		if r != nil {
			return r.fail("101 Switching Protocols", fmt.Sprintf("HTTP %d", r.Status), "the upgrade of /trpc?connectionParams=1 without a header was refused")
		}
		return err
	}
	defer w.Close()
	return w.whoami(ctx, 1, e.WorkspaceID, e.DeviceID)
}

func checkWSAuthHeader(ctx context.Context, e *Env) error {
	return onWS(ctx, e, func(w *WS) error {
		return w.whoami(ctx, 1, e.WorkspaceID, e.DeviceID)
	})
}

func checkWSConnectionParamsWin(ctx context.Context, e *Env) error {
	if e.OtherToken == "" {
		return Skipf("needs --other-token (a device of another workspace)")
	}
	w, r, err := e.dialWS(ctx, wsBoth, e.OtherToken)
	if err != nil {
		if r != nil {
			return r.fail("101 Switching Protocols", fmt.Sprintf("HTTP %d", r.Status), "the upgrade was refused")
		}
		return err
	}
	defer w.Close()
	return step("an Authorization header and a connectionParams token: the connectionParams token wins (PROTOCOL.md 2)",
		w.whoami(ctx, 1, e.OtherWorkspaceID, e.OtherDeviceID))
}

func checkWSNoToken(ctx context.Context, e *Env) error {
	for _, c := range []struct {
		auth  wsAuth
		token string
		what  string
	}{
		{wsNone, "", "an upgrade without a token"},
		{wsHeader, bogusToken(), "an upgrade with an Authorization header no device has"},
	} {
		w, r, err := e.dialWS(ctx, c.auth, c.token)
		if err == nil {
			w.Close()
			return failf("%s was accepted; it is refused with 401 (PROTOCOL.md 5.3)", c.what)
		}
		if r == nil {
			return step(c.what, err)
		}
		_, err = expectError(r, "UNAUTHORIZED", "")
		if err != nil {
			return step(c.what, err)
		}
	}
	return nil
}

func checkWSBadConnectionParams(ctx context.Context, e *Env) error {
	w, r, err := e.dialWS(ctx, wsParams, bogusToken())
	if err != nil {
		if r != nil {
			return r.fail("101 Switching Protocols", fmt.Sprintf("HTTP %d", r.Status), "the upgrade of /trpc?connectionParams=1 was refused")
		}
		return err
	}
	defer w.Close()
	m, err := w.recv(ctx, `{"id":null,"error":{... UNAUTHORIZED}}`)
	if err != nil {
		return err
	}
	if string(m.ID) != "null" {
		return w.fail(`"id": null`, `"id": `+string(m.ID), "the answer to bad connectionParams has id null")
	}
	if _, err := w.wsError(m, "UNAUTHORIZED", "", "bad connectionParams"); err != nil {
		return err
	}
	code, err := w.closed(ctx)
	if err != nil {
		return err
	}
	if code != websocket.StatusPolicyViolation {
		return w.fail("close 1008", fmt.Sprintf("close %d", code), "bad connectionParams close the socket with 1008 (PROTOCOL.md 5.3)")
	}
	return nil
}

func checkWSPing(ctx context.Context, e *Env) error {
	return onWS(ctx, e, func(w *WS) error {
		for i := 0; i < 2; i++ {
			if err := w.sendRaw(ctx, []byte("PING")); err != nil {
				return err
			}
			b, err := w.next(ctx)
			if err != nil {
				return w.fail("PONG", err.Error(), "PING is answered with PONG")
			}
			if string(b) != "PONG" {
				return w.fail("PONG", excerpt(b, 200), "PING is answered with PONG (the 4 bytes)")
			}
		}
		return nil
	})
}

func checkWSParseError(ctx context.Context, e *Env) error {
	return onWS(ctx, e, func(w *WS) error {
		if err := w.sendRaw(ctx, []byte(`{"id":1,"method":`)); err != nil {
			return err
		}
		m, err := w.recv(ctx, `{"id":null,"error":{... PARSE_ERROR}}`)
		if err != nil {
			return err
		}
		if string(m.ID) != "null" {
			return w.fail(`"id": null`, `"id": `+string(m.ID), "a message that could not be parsed is answered with id null (PROTOCOL.md 5.2)")
		}
		if _, err := w.wsError(m, "PARSE_ERROR", "", "a message that is not JSON"); err != nil {
			return err
		}
		return step("the connection after a parse error", w.whoami(ctx, 2, e.WorkspaceID, e.DeviceID))
	})
}

func checkWSQueryMutation(ctx context.Context, e *Env) error {
	return onWS(ctx, e, func(w *WS) error {
		pid := newID()
		env := e.envelope(pid, newID(), "create-page", map[string]any{"title": "protocol check " + pid})
		if err := w.sendJSON(ctx, map[string]any{"id": "m-1", "jsonrpc": "2.0", "method": "mutation",
			"params": map[string]any{"path": "kb.command", "input": env}}); err != nil {
			return err
		}
		m, err := w.reply(ctx, "m-1", "the answer to a kb.command mutation with a string id")
		if err != nil {
			return err
		}
		if m.JSONRPC != "2.0" {
			return w.fail(`"jsonrpc":"2.0"`, excerpt(m.raw, 200), `a reply echoes "jsonrpc":"2.0" when the request had it (PROTOCOL.md 5.1)`)
		}
		data, err := w.data(m, "kb.command over the WebSocket")
		if err != nil {
			return err
		}
		if !sameJSON(data, []byte(`{"seq":1}`)) {
			var d struct {
				Seq int64 `json:"seq"`
			}
			if json.Unmarshal(data, &d) != nil || d.Seq != 1 {
				return w.fail(`{"seq":1}`, excerpt(data, 200), "create-page over the WebSocket")
			}
		}
		m, err = w.call(ctx, 7, "query", "kb.page", map[string]any{"page_id": pid})
		if err != nil {
			return err
		}
		data, err = w.data(m, "kb.page over the WebSocket")
		if err != nil {
			return err
		}
		s, err := pageData(&Response{Method: "WebSocket", URL: w.url, Body: m.raw}, data)
		if err != nil {
			return err
		}
		if s.seq != 1 {
			return w.fail("seq 1", fmt.Sprintf("seq %d", s.seq), "kb.page over the WebSocket")
		}
		return nil
	})
}

func checkWSCallErrors(ctx context.Context, e *Env) error {
	p, err := e.setupPage(ctx, 1)
	if err != nil {
		return err
	}
	return onWS(ctx, e, func(w *WS) error {
		type call struct {
			method, path string
			input        any
			code         string
			what         string
		}
		calls := []call{
			{"mutation", "kb.command", e.envelope(p.id, newID(), "indent", map[string]any{"node": "n1"}), "CONFLICT", "a rejected command"},
			{"query", "kb.page", map[string]any{"page_id": newID()}, "NOT_FOUND", "kb.page of a page that does not exist"},
			{"mutation", "kb.command", with(p.next(e), "extra", 1), "BAD_REQUEST", "an envelope with an unknown field"},
			{"mutation", "kb.command", with(p.next(e), "device_id", newID()), "FORBIDDEN", "another device's command"},
			{"mutation", "kb.command", e.envelope(newID(), newID(), "edit-text", map[string]any{"node": "n1", "text": "x"}), "NOT_FOUND", "a command on a page that does not exist"},
		}
		for i, c := range calls {
			m, err := w.call(ctx, 100+i, c.method, c.path, c.input)
			if err != nil {
				return step(c.what, err)
			}
			es, err := w.wsError(m, c.code, c.path, c.what)
			if err != nil {
				return err
			}
			if c.code == "CONFLICT" && es.Data.Rejection.Code != "no-previous-sibling" {
				return w.fail("rejection no-previous-sibling", es.Data.Rejection.Code, "%s", c.what)
			}
		}
		m, err := w.call(ctx, 200, "query", "kb.nope", nil)
		if err != nil {
			return err
		}
		if _, err := w.wsError(m, "NOT_FOUND", "", "an unknown procedure"); err != nil {
			return err
		}
		return e.unchanged(ctx, p)
	})
}

func checkWSMessageBatch(ctx context.Context, e *Env) error {
	return onSocket(ctx, e, func(p *page, w *WS) error {
		e0 := e.envelope(p.id, newID(), "create-after", p.nodePayload(1))
		e1 := e.envelope(p.id, newID(), "create-after", p.nodePayload(2))
		msgs := []any{
			map[string]any{"id": 1, "method": "mutation", "params": map[string]any{"path": "kb.command", "input": e0}},
			map[string]any{"id": 2, "method": "mutation", "params": map[string]any{"path": "kb.command", "input": e1}},
			map[string]any{"id": 3, "method": "query", "params": map[string]any{"path": "kb.whoami"}},
		}
		if err := w.sendJSON(ctx, msgs); err != nil {
			return err
		}
		// Replies may come in any order (PROTOCOL.md 5.1): match them by id.
		replies := map[string]*wsMsg{}
		for len(replies) < len(msgs) {
			m, err := w.recv(ctx, fmt.Sprintf("the answers to the array's %d messages (%d so far)", len(msgs), len(replies)))
			if err != nil {
				return err
			}
			id := string(m.ID)
			if _, dup := replies[id]; dup || (id != "1" && id != "2" && id != "3") {
				return w.fail(`one reply to each of the ids 1, 2 and 3`, excerpt(m.raw, 300),
					"each message of an array is answered once, with its request's id (PROTOCOL.md 5.1)")
			}
			replies[id] = m
		}
		for i := 1; i <= 2; i++ {
			m := replies[fmt.Sprint(i)]
			if m.Error != nil {
				return w.fail(fmt.Sprintf(`{"id":%d,"result":{"type":"data","data":{"seq":%d}}}`, i, 1+i), excerpt(m.raw, 300),
					"message %d of the array failed: the messages of an array are handled in array order (PROTOCOL.md 5.1; message 2 creates its node after message 1's)", i)
			}
			data, err := w.data(m, fmt.Sprintf("message %d of the array", i))
			if err != nil {
				return err
			}
			var d struct {
				Seq int64 `json:"seq"`
			}
			if json.Unmarshal(data, &d) != nil || d.Seq != int64(1+i) {
				return w.fail(fmt.Sprintf(`{"seq":%d}`, 1+i), excerpt(data, 200),
					"message %d of the array (a command) gets seq %d: the messages of an array are handled in array order (PROTOCOL.md 5.1; their replies may come in any order)", i, 1+i)
			}
		}
		_, err := w.data(replies["3"], "kb.whoami, message 3 of the array")
		return err
	})
}

func checkWSSubscribeReplayLive(ctx context.Context, e *Env) error {
	return onSubscribed(ctx, e, 2, func(p *page, w *WS) error {
		if err := step("replay of the log from seq 1", w.events(ctx, 1, p, 1, 3)); err != nil {
			return err
		}
		if err := e.addNodes(ctx, p, 1); err != nil {
			return err
		}
		if _, err := e.commit(ctx, p, "edit-text", map[string]any{"node": "n1", "text": "live"}); err != nil {
			return err
		}
		if err := step("live commands", w.events(ctx, 1, p, 4, 5)); err != nil {
			return err
		}
		return w.quiet(ctx, "no event after the last command (no duplicates)")
	})
}

func checkWSLastEventID(ctx context.Context, e *Env) error {
	p, err := e.setupPage(ctx, 3)
	if err != nil {
		return err
	}
	w, err := e.subscribedTo(ctx, 1, p, strp("2"))
	if err != nil {
		return err
	}
	defer w.Close()
	if err := step(`params.lastEventId "2": exactly the commands after seq 2`, w.events(ctx, 1, p, 3, 4)); err != nil {
		return err
	}
	if err := w.quiet(ctx, "nothing after the log's last seq"); err != nil {
		return err
	}
	if err := e.addNodes(ctx, p, 1); err != nil {
		return err
	}
	if err := step("a live command after the resume", w.events(ctx, 1, p, 5, 5)); err != nil {
		return err
	}
	// lastEventId = the last seq: nothing to replay, then live.
	w2, err := e.subscribedTo(ctx, "up-to-date", p, strp("5"))
	if err != nil {
		return err
	}
	defer w2.Close()
	if err := w2.quiet(ctx, `lastEventId "5" on a page at seq 5: nothing to replay`); err != nil {
		return err
	}
	if err := e.addNodes(ctx, p, 1); err != nil {
		return err
	}
	return step(`lastEventId "5": the next live command`, w2.events(ctx, "up-to-date", p, 6, 6))
}

func checkWSLastEventIDInput(ctx context.Context, e *Env) error {
	p, err := e.setupPage(ctx, 3)
	if err != nil {
		return err
	}
	// Each subscription on its own socket: the params of its message, and
	// what it must deliver of the page at seq 4.
	for _, c := range []struct {
		what   string
		params map[string]any
	}{
		{`input.lastEventId "3"`, map[string]any{"input": map[string]any{"page_id": p.id, "lastEventId": "3"}}},
		{`input.lastEventId "1" and params.lastEventId "3": params win`,
			map[string]any{"input": map[string]any{"page_id": p.id, "lastEventId": "1"}, "lastEventId": "3"}},
		{`input.lastEventId "3" and params.lastEventId null: null is absent, the input's applies`,
			map[string]any{"input": map[string]any{"page_id": p.id, "lastEventId": "3"}, "lastEventId": nil}},
	} {
		c.params["path"] = "kb.onPage"
		if err := func() error {
			w, err := e.ws(ctx)
			if err != nil {
				return err
			}
			defer w.Close()
			if err := step(c.what+" (PROTOCOL.md 4.4)", w.subscribeParams(ctx, 1, "kb.onPage", c.params)); err != nil {
				return err
			}
			if err := step(c.what+" (PROTOCOL.md 4.4)", w.events(ctx, 1, p, 4, 4)); err != nil {
				return err
			}
			return w.quiet(ctx, c.what+": only seq 4")
		}(); err != nil {
			return err
		}
	}
	return nil
}

// checkWSBadLastEventID: lastEventId is a JSON string of decimal digits,
// in params or in input; any other value is the subscription's
// BAD_REQUEST (PROTOCOL.md 4.4).
func checkWSBadLastEventID(ctx context.Context, e *Env) error {
	return onSocket(ctx, e, func(p *page, w *WS) error {
		for i, c := range []struct {
			inInput bool
			bad     any
		}{
			{false, "x"}, {false, "-1"}, {false, "1.5"}, {false, ""}, {false, "+1"}, {false, 1}, {false, false},
			{true, "x"}, {true, ""}, {true, 1},
		} {
			input := map[string]any{"page_id": p.id}
			params := map[string]any{"path": "kb.onPage", "input": input}
			where := "params.lastEventId"
			if c.inInput {
				input["lastEventId"], where = c.bad, "input.lastEventId"
			} else {
				params["lastEventId"] = c.bad
			}
			b, _ := json.Marshal(c.bad)
			what := fmt.Sprintf("a subscription with %s %s (a string of decimal digits or null, PROTOCOL.md 4.4)", where, b)
			if err := w.sendJSON(ctx, map[string]any{"id": i + 1, "method": "subscription", "params": params}); err != nil {
				return err
			}
			m, err := w.reply(ctx, i+1, what)
			if err != nil {
				return err
			}
			if _, err := w.wsError(m, "BAD_REQUEST", "kb.onPage", what); err != nil {
				return err
			}
		}
		return nil
	})
}

func checkWSSubscribeNotFound(ctx context.Context, e *Env) error {
	return onWS(ctx, e, func(w *WS) error {
		for i, c := range []struct {
			input any
			code  string
			what  string
		}{
			{map[string]any{"page_id": newID()}, "NOT_FOUND", "kb.onPage of a page that does not exist"},
			{map[string]any{"page_id": "not-a-uuid"}, "BAD_REQUEST", "kb.onPage of a page_id that is not a uuid"},
			{map[string]any{"page_id": newID(), "bogus": 1}, "BAD_REQUEST", "kb.onPage with an unknown field"},
		} {
			if err := w.sendJSON(ctx, map[string]any{"id": i + 1, "method": "subscription",
				"params": map[string]any{"path": "kb.onPage", "input": c.input}}); err != nil {
				return err
			}
			m, err := w.reply(ctx, i+1, "the answer to "+c.what)
			if err != nil {
				return err
			}
			if _, err := w.wsError(m, c.code, "kb.onPage", c.what); err != nil {
				return err
			}
		}
		return nil
	})
}

func checkWSDuplicateID(ctx context.Context, e *Env) error {
	return onSocket(ctx, e, func(p *page, w *WS) error {
		if err := w.subscribe(ctx, 5, "kb.onPage", map[string]any{"page_id": p.id}, nil); err != nil {
			return err
		}
		if err := w.events(ctx, 5, p, 1, 1); err != nil {
			return err
		}
		if err := w.sendJSON(ctx, map[string]any{"id": 5, "method": "subscription",
			"params": map[string]any{"path": "kb.onPage", "input": map[string]any{"page_id": p.id}}}); err != nil {
			return err
		}
		m, err := w.reply(ctx, 5, "the answer to a second subscription with the same id")
		if err != nil {
			return err
		}
		_, err = w.wsError(m, "BAD_REQUEST", "", "a subscription id already open (Duplicate id, PROTOCOL.md 5.1)")
		return err
	})
}

func checkWSStop(ctx context.Context, e *Env) error {
	return onSubscribed(ctx, e, 0, func(p *page, w *WS) error {
		if err := w.events(ctx, 1, p, 1, 1); err != nil {
			return err
		}
		if err := w.sendJSON(ctx, map[string]any{"id": 1, "method": "subscription.stop"}); err != nil {
			return err
		}
		m, err := w.reply(ctx, 1, `{"id":1,"result":{"type":"stopped"}}`)
		if err != nil {
			return err
		}
		if m.Result == nil || m.Result.Type != "stopped" {
			return w.fail(`{"id":1,"result":{"type":"stopped"}}`, excerpt(m.raw, 200), "subscription.stop is answered with stopped (PROTOCOL.md 5.1)")
		}
		if err := e.addNodes(ctx, p, 1); err != nil {
			return err
		}
		if err := w.quiet(ctx, "no event after subscription.stop"); err != nil {
			return err
		}
		// The id is free again.
		if err := w.subscribe(ctx, 1, "kb.onPage", map[string]any{"page_id": p.id}, strp("1")); err != nil {
			return step("a new subscription with the stopped id", err)
		}
		return w.events(ctx, 1, p, 2, 2)
	})
}

func checkWSMessageTooBig(ctx context.Context, e *Env) error {
	return onWS(ctx, e, func(w *WS) error {
		msg := rawJSON(map[string]any{"id": 1, "method": "query",
			"params": map[string]any{"path": "kb.whoami", "input": map[string]any{"pad": e.bigText()}}})
		w.log("> ", msg)
		// The server may close before the whole message is written.
		_ = w.conn.Write(ctx, websocket.MessageText, msg)
		code, err := w.closed(ctx)
		if err != nil {
			return err
		}
		if code != websocket.StatusMessageTooBig {
			return w.fail("close 1009", fmt.Sprintf("close %d", code),
				"a message of %d bytes (over the %d-byte limit) closes the connection with 1009 (PROTOCOL.md 5.3)", len(msg), e.MaxBody)
		}
		return nil
	})
}

func checkWSInvalidate(ctx context.Context, e *Env) error {
	w, err := e.directoryInvalidations(ctx)
	if err != nil {
		return err
	}
	defer w.Close()
	// Invalidations are hints (PROTOCOL.md 4.5): a server may still be
	// setting the subscription up right after "started" (the reference
	// server starts listening for commits with its first subscriber), so
	// a page is created again every 2 s until one of them is announced.
	ours := map[string]bool{}
	deadline := time.Now().Add(e.EventTimeout)
	for time.Now().Before(deadline) {
		p, err := e.setupPage(ctx, 0)
		if err != nil {
			return err
		}
		ours[p.id] = true
		attempt := time.Now().Add(min(2*time.Second, time.Until(deadline)))
		for time.Now().Before(attempt) {
			b, err := w.nextWithin(ctx, time.Until(attempt))
			if errors.Is(err, errTimeout) {
				break
			}
			if err != nil {
				return w.fail("a directory invalidation", err.Error(), "the WebSocket ended")
			}
			m := &wsMsg{raw: b}
			if err := json.Unmarshal(b, m); err != nil {
				return w.fail(`{"id":"inv","result":{"type":"data","data":{...}}}`, excerpt(b, 300), "not a JSON message: %v", err)
			}
			if !sameJSON(m.ID, []byte(`"inv"`)) {
				return w.fail(`"id": "inv"`, excerpt(b, 300), "a message of another id")
			}
			data, err := w.data(m, "an invalidation")
			if err != nil {
				return err
			}
			var d struct {
				Topic  string `json:"topic"`
				PageID string `json:"page_id"`
			}
			if err := json.Unmarshal(data, &d); err != nil || d.Topic != "directory" {
				return w.fail(`{"topic":"directory","page_id":...,"seq":...}`, excerpt(m.raw, 300), "an invalidation's data")
			}
			if len(m.Result.ID) > 0 && string(m.Result.ID) != "null" {
				return w.fail("no result.id (invalidations are not tracked)", excerpt(m.raw, 300), "an invalidation's result")
			}
			if ours[d.PageID] || d.PageID == "" {
				return nil
			}
			// Another page's change (another client of the workspace): wait on.
		}
	}
	return w.fail(`{"topic":"directory","page_id":<a page created>,"seq":1}`, fmt.Sprintf("none for %d pages created within %s", len(ours), e.EventTimeout),
		"no directory invalidation for the new pages")
}
