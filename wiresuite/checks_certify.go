package wiresuite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gowebpki/jcs"
	"github.com/subspace/kbkit/kbcore"
)

// Rules an independent server once broke while the suite passed it: each
// check here fails against a broken variant of the reference server
// (certify_test.go).

func certifyCallChecks() []Check {
	return []Check{
		{"protocol/hostile-id-other-device", "an id decided by another device of the workspace, on the same page, is rejected id-reused (409) and writes nothing; the first device's retry keeps its outcome (4.1; needs --token2)", checkIDOtherDevice},
		{"protocol/ws-event-bytes", "an event's data {cmd, seq} is canonical JSON (RFC 8785), whatever white space, key order and escapes the payload was sent with, and the same bytes live and replayed (4.4)", checkEventBytes},
		{"protocol/ws-invalidate-directory", "kb.onInvalidate sends a directory invalidation for create-page, rename-page, set-aliases, merge-page and restore-page, naming the page and seq (4.5)", checkInvalidateDirectory},
		{"protocol/ws-invalidate-unknown-topic", "kb.onInvalidate with a topic the server does not have is BAD_REQUEST (4.5)", checkInvalidateUnknownTopic},
		{"protocol/hostile-max-pending", "kb.page with max_pending pending ids is served; one more is 400 BAD_REQUEST (4.2, 8)", checkMaxPending},
	}
}

func certifyChecks() []Check { return append(certifyCallChecks(), certifyConnChecks()...) }

// ---- command ids across devices ----

func checkIDOtherDevice(ctx context.Context, e *Env) error {
	if e.Token2 == "" {
		return Skipf("needs --token2 (a second device of the token's workspace)")
	}
	p, err := e.setupPage(ctx, 0)
	if err != nil {
		return err
	}
	secret := "secret text " + newID()[:8]
	committed, err := e.commit(ctx, p, "create-after", map[string]any{"node": "n1", "text": secret})
	if err != nil {
		return step("setup", err)
	}
	rejected := newID()
	r, err := e.mutate(ctx, "kb.command", e.envelope(p.id, rejected, "edit-text", map[string]any{"node": "missing", "text": secret}))
	if err != nil {
		return err
	}
	if _, err := expectError(r, "CONFLICT", "kb.command"); err != nil {
		return step("setup: a rejected edit-text of a missing node", err)
	}
	two := &Env{BaseURL: e.BaseURL, Token: e.Token2, DeviceID: e.Device2ID, HTTP: e.HTTP,
		EventTimeout: e.EventTimeout, Quiet: e.Quiet, MaxBody: e.MaxBody}
	for i, id := range []string{committed, rejected} {
		what := []string{"committed", "rejected"}[i]
		r, err := two.mutate(ctx, "kb.command", two.envelope(p.id, id, "create-after", map[string]any{"node": fmt.Sprintf("d%d", i), "text": "device 2's own command"}))
		if err != nil {
			return err
		}
		es, err := expectError(r, "CONFLICT", "kb.command")
		if err != nil {
			return step(fmt.Sprintf("device 2's command, same page, with an id device 1 %s (PROTOCOL.md 4.1: id-reused, never its outcome)", what), err)
		}
		if es.Data.Rejection == nil || es.Data.Rejection.Code != "id-reused" {
			return r.fail("rejection id-reused", excerpt(r.Body, 300),
				"an id decided by another device of the workspace is rejected id-reused (PROTOCOL.md 4.1), even on the same page")
		}
		if strings.Contains(string(r.Body), secret) {
			return r.fail("a message naming nothing of the first use", excerpt(r.Body, 300), "the id-reused answer reveals the first use's text (PROTOCOL.md 4.1)")
		}
	}
	if err := e.unchanged(ctx, p); err != nil {
		return step("after device 2's commands", err)
	}
	r, err = e.mutate(ctx, "kb.command", e.envelope(p.id, committed, "create-after", map[string]any{"node": "n1", "text": secret}))
	if err != nil {
		return err
	}
	if seq, dup, err := seqOf(r); err != nil || !dup || seq != 2 {
		return step("device 1's retry of its committed id", firstErr(err, r.fail(`{"seq":2,"duplicate":true}`, excerpt(r.Body, 200),
			"the first use keeps the id: its retry answers its original outcome (PROTOCOL.md 4.1)")))
	}
	return nil
}

// ---- event bytes ----

func checkEventBytes(ctx context.Context, e *Env) error {
	p, err := e.setupPage(ctx, 0)
	if err != nil {
		return err
	}
	head := "1"
	live, err := e.subscribedTo(ctx, 1, p, &head)
	if err != nil {
		return err
	}
	defer live.Close()
	// The payload as a client may send it: white space, keys out of
	// order, escapes RFC 8785 does not write (\u003c, \/, \u00e9, a
	// surrogate pair), and text that meets every byte rule.
	text, _ := json.Marshal(byteRules)
	id := newID()
	payload := `{ "text" : "\u003cb\u003e \/ caf\u00e9 \ud83d\ude00 " , "node":"n1" }`
	body := fmt.Sprintf(`{"id":%q,"device_id":%q,"page_id":%q,"type":"create-after","payload":%s}`, id, e.DeviceID, p.id, payload)
	body2 := fmt.Sprintf(`{"payload":{"after":"n1","text":%s,"node":"n2"},"type":"create-after","page_id":%q,"device_id":%q,"id":%q}`,
		text, p.id, e.DeviceID, newID())
	for i, b := range []string{body, body2} {
		r, err := e.send(ctx, request{method: http.MethodPost, path: "/trpc/kb.command", body: []byte(b)})
		if err != nil {
			return err
		}
		if seq, dup, err := seqOf(r); err != nil || dup || seq != int64(2+i) {
			return step(fmt.Sprintf("setup: command %d", i+1), firstErr(err, r.fail(fmt.Sprintf(`{"seq":%d}`, 2+i), excerpt(r.Body, 200), "a new command")))
		}
	}
	liveData := map[int64][]byte{}
	for seq := int64(2); seq <= 3; seq++ {
		d, err := live.replyData(ctx, 1, fmt.Sprintf("the live event of seq %d", seq))
		if err != nil {
			return err
		}
		liveData[seq] = d
	}
	replay, err := e.subscribedTo(ctx, 1, p, &head)
	if err != nil {
		return err
	}
	defer replay.Close()
	for seq := int64(2); seq <= 3; seq++ {
		d, err := replay.replyData(ctx, 1, fmt.Sprintf("the replayed event of seq %d", seq))
		if err != nil {
			return err
		}
		canon, err := jcs.Transform(liveData[seq])
		if err != nil {
			return live.fail("a JSON value", excerpt(liveData[seq], 300), "the live event of seq %d: its data is not JSON: %v", seq, err)
		}
		if !bytes.Equal(canon, liveData[seq]) {
			return live.fail(string(canon), string(liveData[seq]), "the live event of seq %d: data {cmd, seq} is canonical JSON (PROTOCOL.md 4.4; README.md 1): %s",
				seq, kbcore.CanonicalMismatch(liveData[seq], canon))
		}
		if !bytes.Equal(d, liveData[seq]) {
			return replay.fail(string(liveData[seq]), string(d), "the event of seq %d is the same bytes live and replayed (PROTOCOL.md 4.4): %s",
				seq, kbcore.CanonicalMismatch(d, liveData[seq]))
		}
	}
	return nil
}

// ---- kb.onInvalidate ----

// invalidation waits for a directory invalidation on w (subscription
// "inv") naming page at seq or later, or naming no page (the server
// may have missed changes: every subscriber refetches).
func invalidation(ctx context.Context, w *WS, page string, seq int64, what string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		b, err := w.nextWithin(ctx, time.Until(deadline))
		if errors.Is(err, errTimeout) {
			return w.fail(fmt.Sprintf(`{"topic":"directory","page_id":%q,"seq":%d}`, page, seq), "nothing within "+within.String(),
				"%s commits and changes the directory: kb.onInvalidate sends a directory invalidation (PROTOCOL.md 4.5)", what)
		}
		if err != nil {
			return w.fail("a directory invalidation", err.Error(), "the WebSocket ended")
		}
		m := &wsMsg{raw: b}
		if err := json.Unmarshal(b, m); err != nil || !sameJSON(m.ID, []byte(`"inv"`)) {
			return w.fail(`{"id":"inv","result":{"type":"data","data":{...}}}`, excerpt(b, 300), "a message that is not the invalidation subscription's")
		}
		data, err := w.data(m, "an invalidation")
		if err != nil {
			return err
		}
		var d struct {
			Topic  string `json:"topic"`
			PageID string `json:"page_id"`
			Seq    int64  `json:"seq"`
		}
		if err := json.Unmarshal(data, &d); err != nil || d.Topic != "directory" {
			return w.fail(`{"topic":"directory","page_id":...,"seq":...}`, excerpt(m.raw, 300), "an invalidation's data")
		}
		if d.PageID == "" || (d.PageID == page && d.Seq >= seq) {
			return nil
		}
	}
}

func checkInvalidateDirectory(ctx context.Context, e *Env) error {
	w, err := e.directoryInvalidations(ctx)
	if err != nil {
		return err
	}
	defer w.Close()
	// The first page is created again until its invalidation comes (a
	// server may still be setting the subscription up: 4.5's hints).
	var p *page
	for attempt := 0; ; attempt++ {
		if p, err = e.setupPage(ctx, 0); err != nil {
			return err
		}
		if err = invalidation(ctx, w, p.id, 1, "create-page", min(2*time.Second, e.EventTimeout)); err == nil {
			break
		}
		if attempt == 4 {
			return err
		}
	}
	q, err := e.setupPage(ctx, 0)
	if err != nil {
		return err
	}
	if err := invalidation(ctx, w, q.id, 1, "create-page", e.EventTimeout); err != nil {
		return err
	}
	for _, c := range []cmd{
		{"rename-page", map[string]any{"title": "protocol check renamed " + newID()}},
		{"set-aliases", map[string]any{"aliases": []any{"alias " + newID()}}},
		{"merge-page", map[string]any{"into": q.id}},
		{"restore-page", map[string]any{"page": p.id, "nodes": []any{}}},
	} {
		if _, err := e.commit(ctx, p, c.typ, c.payload); err != nil {
			return step("setup: "+c.typ, err)
		}
		if err := invalidation(ctx, w, p.id, p.seq, c.typ, e.EventTimeout); err != nil {
			return err
		}
	}
	return nil
}

func checkInvalidateUnknownTopic(ctx context.Context, e *Env) error {
	return onWS(ctx, e, func(w *WS) error {
		if err := w.sendJSON(ctx, map[string]any{"id": "inv", "method": "subscription",
			"params": map[string]any{"path": "kb.onInvalidate", "input": map[string]any{"topics": []string{"directory", "no-such-topic"}}}}); err != nil {
			return err
		}
		m, err := w.reply(ctx, "inv", "the answer to kb.onInvalidate with an unknown topic")
		if err != nil {
			return err
		}
		if _, err := w.wsError(m, "BAD_REQUEST", "kb.onInvalidate", "kb.onInvalidate with the topic \"no-such-topic\" (PROTOCOL.md 4.5: a topic the server does not have is BAD_REQUEST)"); err != nil {
			return err
		}
		return w.quiet(ctx, "a refused subscription sends nothing more")
	})
}

// ---- max_pending ----

func checkMaxPending(ctx context.Context, e *Env) error {
	_, n, err := e.needLimit(ctx, "max_pending", limitNeed{
		none: failf("kb.limits advertises no max_pending (PROTOCOL.md 8)"),
		most: 100000, over: Skipf("more ids than this suite sends (100000)"),
	})
	if err != nil {
		return err
	}
	p, err := e.setupPage(ctx, 0)
	if err != nil {
		return err
	}
	ids := make([]string, n+1)
	for i := range ids {
		ids[i] = newID()
	}
	ids[0] = p.cmds[1].ID
	// POST-free: kb.page is a query; a long pending list may pass
	// max_body as a GET input, so the check sends what fits.
	if int64(37*(n+1)+100) > e.MaxBody {
		return Skipf("max_pending+1 ids (%d bytes) do not fit in max_body %d", 37*(n+1)+100, e.MaxBody)
	}
	s, err := e.snapshot(ctx, p.id, ids[:n])
	if err != nil {
		return step(fmt.Sprintf("kb.page with max_pending (%d) pending ids", n), err)
	}
	if len(s.outcomes) != 1 {
		return s.r.fail("one outcome (create-page's)", show(s.outcomes), "kb.page with max_pending ids answers the decided one")
	}
	r, err := e.query(ctx, "kb.page", map[string]any{"page_id": p.id, "pending": ids})
	if err != nil {
		return err
	}
	if _, err := expectError(r, "BAD_REQUEST", "kb.page"); err != nil {
		return step(fmt.Sprintf("kb.page with max_pending+1 (%d) pending ids (PROTOCOL.md 8: 400)", n+1), err)
	}
	return nil
}
