package server

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/subspace/kbkit/internal/wsframe"
	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/server/store"
	"github.com/subspace/kbkit/wire"
)

// dialSubscribed opens a socket subscribed (id 1) to page from seq 2 on
// (newPage's head).
func dialSubscribed(t *testing.T, in *instance, c client, page string) *rawWS {
	t.Helper()
	w := dialRaw(t, in.ts.URL, c.dev.Token, 0)
	w.subscribe(1, page, 2)
	if r := w.reply(); r.Result == nil || r.Result.Type != "started" {
		t.Fatalf("want started, got %s", mustJSON(r))
	}
	return w
}

// mutate sends kb.command as a mutation on the socket.
func (w *rawWS) mutate(id int, env []byte) {
	w.t.Helper()
	w.send(map[string]any{"id": id, "method": "mutation", "params": map[string]any{"path": wire.PathCommand, "input": json.RawMessage(env)}})
}

// Commands sent as mutations on the socket that subscribes to their page
// get their replies and their events; rejections and duplicates get
// their replies with no event to wait for.
func TestWSCommandsOnTheSubscribedSocket(t *testing.T) {
	in := newInstance(t, pgprovider.ForTest(t), Options{})
	c := pair(t, in, "acme")
	page := c.newPage()
	w := dialSubscribed(t, in, c, page)
	const n = 20
	writes, frames := wsWrites.Load(), wsFrames.Load()
	var last string
	for i := range n {
		last = uuid.NewString()
		w.mutate(100+i, c.envelope(last, page, "edit-text", map[string]any{"node": "n", "text": fmt.Sprint(i)}))
		var seq, event int64
		for range 2 {
			r := w.reply()
			switch {
			case r.Result == nil || r.Result.Type != "data":
				t.Fatalf("command %d: want its reply and its event, got %s", i, mustJSON(r))
			case string(r.ID) == "1":
				event = decode[wire.PageEvent](t, r.Result.Data).Seq
			case string(r.ID) == fmt.Sprint(100+i):
				seq = decode[wire.CommandResult](t, r.Result.Data).Seq
			default:
				t.Fatalf("command %d: a message of id %s", i, r.ID)
			}
		}
		if seq != int64(3+i) || event != seq {
			t.Fatalf("command %d: reply seq %d, event seq %d, want %d", i, seq, event, 3+i)
		}
	}
	dw, df := wsWrites.Load()-writes, wsFrames.Load()-frames
	t.Logf("%d frames in %d writes", df, dw)
	if df != 2*n {
		t.Fatalf("%d frames for %d commands, want a reply and an event each", df, n)
	}

	// A rejected command and a duplicate get their reply with no event
	// to wait for.
	w.mutate(200, c.envelope(uuid.NewString(), page, "edit-text", map[string]any{"node": "missing", "text": "x"}))
	if r := w.reply(); string(r.ID) != "200" || r.Error == nil || r.Error.Data.Rejection == nil {
		t.Fatalf("want the rejection, got %s", mustJSON(r))
	}
	w.mutate(201, c.envelope(last, page, "edit-text", map[string]any{"node": "n", "text": fmt.Sprint(n - 1)}))
	if r := w.reply(); string(r.ID) != "201" || r.Result == nil || !strings.Contains(string(r.Result.Data), `"duplicate":true`) {
		t.Fatalf("want the duplicate's answer, got %s", mustJSON(r))
	}
}

// quiet checks that nothing arrives on w for d.
func (w *rawWS) quiet(d time.Duration) {
	w.t.Helper()
	_ = w.nc.SetReadDeadline(time.Now().Add(d))
	if b, err := w.br.Peek(1); err == nil {
		w.t.Fatalf("want nothing for %v, got % x...", d, b)
	}
}

// The reply to a committed command carries on with the events its
// socket's subscription of the page is owed from its transaction, in the
// same write; the dispatcher's delivery of those seqs then sends nothing
// more, and a log with a gap after the subscription's last seq is left to
// the dispatcher. The socket's worker, its queue empty, writes them itself
// (writeQueued), without handing a task to a writer goroutine.
func TestWSReplyCarriesItsEvents(t *testing.T) {
	in := newInstance(t, pgprovider.ForTest(t), Options{})
	c := pair(t, in, "acme")
	page := c.newPage()
	w := dialSubscribed(t, in, c, page)
	sc := serverConn(t, in, w)
	// The answer to the command of seq 3, as the store gives it, made
	// before that command commits (as a group's callers are answered
	// before the dispatcher delivers the group's events).
	id := uuid.NewString()
	logged := store.Entry{Seq: 3, Cmd: kbcore.Command{ID: id, Type: "edit-text", Payload: json.RawMessage(`{"node":"n","text":"x"}`)}}
	writes, frames, given := wsWrites.Load(), wsFrames.Load(), in.srv.tasks.Given()
	sc.answerCommand(wsMessage{ID: json.RawMessage("7")}, committedCommand{CommandResult: wire.CommandResult{Seq: 3}, page: page, events: logOf(logged)})
	sc.writeQueued()
	if d := in.srv.tasks.Given() - given; d != 0 {
		t.Fatalf("answering handed %d tasks to the socket's goroutines, want none: the answering goroutine writes", d)
	}
	if r := w.reply(); string(r.ID) != "7" || r.Result == nil || string(r.Result.Data) != `{"seq":3}` {
		t.Fatalf("want the reply of 7 first, got %s", mustJSON(r))
	}
	r := w.reply()
	if string(r.ID) != "1" || r.Result == nil || r.Result.ID != "3" {
		t.Fatalf("want the event of seq 3, got %s", mustJSON(r))
	}
	if ev := decode[wire.PageEvent](t, r.Result.Data); ev.Seq != 3 || ev.Cmd.ID != id {
		t.Fatalf("event %+v", ev)
	}
	if dw, df := wsWrites.Load()-writes, wsFrames.Load()-frames; dw != 1 || df != 2 {
		t.Fatalf("%d frames in %d writes, want the reply and its event in one", df, dw)
	}
	// The command commits; the dispatcher's event of seq 3 is not sent
	// again, and the next one is.
	status, _ := c.command(id, page, "edit-text", map[string]any{"node": "n", "text": "x"})
	if status != 200 {
		t.Fatalf("commit: HTTP %d", status)
	}
	w.quiet(200 * time.Millisecond)
	c.mustCommit(page, "edit-text", map[string]any{"node": "n", "text": "y"})
	if ev := w.events(1); len(ev["1"]) != 1 || ev["1"][0] != 4 {
		t.Fatalf("want the event of seq 4 alone, got %v", ev)
	}
	// A log that does not follow the subscription's last seq: the reply
	// goes alone.
	frames = wsFrames.Load()
	sc.answerCommand(wsMessage{ID: json.RawMessage("8")}, committedCommand{CommandResult: wire.CommandResult{Seq: 6}, page: page,
		events: logOf(store.Entry{Seq: 6, Cmd: logged.Cmd})})
	sc.writeQueued()
	if r := w.reply(); string(r.ID) != "8" {
		t.Fatalf("want the reply of 8, got %s", mustJSON(r))
	}
	w.quiet(100 * time.Millisecond)
	if df := wsFrames.Load() - frames; df != 1 {
		t.Fatalf("%d frames, want the reply alone", df)
	}
}

// Windows that send their commands on their sockets, several at once on
// one page (the group transactions answer them before the dispatcher
// delivers their events): every socket gets every event once, in seq
// order, and every reply.
func TestWSConcurrentCommandsOnSockets(t *testing.T) {
	in := newInstance(t, pgprovider.ForTest(t), Options{})
	c := pair(t, in, "acme")
	page := c.newPage()
	const sockets, each = 4, 25
	ws := make([]*rawWS, sockets)
	for i := range ws {
		ws[i] = dialSubscribed(t, in, c, page)
	}
	echoes := wsEchoes.Load()
	errs := make(chan error, sockets)
	for i, w := range ws {
		go func() { errs <- closedLoop(w, c, page, i, each, sockets*each) }()
	}
	for range sockets {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if wsEchoes.Load() == echoes {
		t.Error("no event went out with a reply")
	}
}

// closedLoop sends each commands on w one after another, reading replies
// and events, until it has every reply and the events of seqs 3 to
// 2+total, each once and in order. It reports instead of failing (it runs
// on its own goroutine).
func closedLoop(w *rawWS, c client, page string, n, each, total int) error {
	next := int64(3)
	sent, replied := 0, 0
	send := func() error {
		env := c.envelope(uuid.NewString(), page, "edit-text", map[string]any{"node": "n", "text": fmt.Sprint(n, sent)})
		b, _ := json.Marshal(map[string]any{"id": 100 + sent, "method": "mutation",
			"params": map[string]any{"path": wire.PathCommand, "input": json.RawMessage(env)}})
		sent++
		_, err := w.nc.Write(wsframe.AppendMasked(nil, true, wsframe.OpText, [4]byte{1, 2, 3, 4}, b))
		return err
	}
	if err := send(); err != nil {
		return err
	}
	for replied < each || next <= int64(2+total) {
		_ = w.nc.SetReadDeadline(time.Now().Add(15 * time.Second))
		b, err := w.br.Peek(2)
		if err == nil {
			b, err = w.br.Peek(wsframe.HeaderLen(b[0], b[1]))
		}
		if err != nil {
			return fmt.Errorf("socket %d: %v (replies %d, next seq %d)", n, err, replied, next)
		}
		h, hl := wsframe.ParseHeader(b)
		_, _ = w.br.Discard(hl)
		p := make([]byte, h.Length)
		if _, err := io.ReadFull(w.br, p); err != nil {
			return err
		}
		var r wsReply
		if err := json.Unmarshal(p, &r); err != nil || r.Result == nil || r.Result.Type != "data" {
			return fmt.Errorf("socket %d: %s", n, p)
		}
		if string(r.ID) == "1" {
			var ev wire.PageEvent
			if err := json.Unmarshal(r.Result.Data, &ev); err != nil || ev.Seq != next {
				return fmt.Errorf("socket %d: event %s, want seq %d", n, r.Result.Data, next)
			}
			next++
			continue
		}
		if string(r.ID) != fmt.Sprint(100+replied) {
			return fmt.Errorf("socket %d: reply %s, want id %d", n, p, 100+replied)
		}
		replied++
		if sent < each {
			if err := send(); err != nil {
				return err
			}
		}
	}
	return nil
}

// logOf is a committed command's log of its page made of entries.
func logOf(entries ...store.Entry) func(string, func(string, []store.Entry) any) any {
	return func(page string, make func(string, []store.Entry) any) any { return make(page, entries) }
}

// serverConn is the server's side of w.
func serverConn(t *testing.T, in *instance, w *rawWS) *wsConn {
	t.Helper()
	in.srv.mu.Lock()
	defer in.srv.mu.Unlock()
	for sc := range in.srv.conns {
		if sc.ws.nc.RemoteAddr().String() == w.nc.LocalAddr().String() {
			return sc
		}
	}
	t.Fatal("no server connection for the socket")
	return nil
}

// plainWSMessage reads what the reflective decoding reads, or declines.
func TestPlainWSMessage(t *testing.T) {
	for _, msg := range []string{
		`{"id":1,"method":"mutation","params":{"path":"kb.command","input":{"id":"a","payload":{"node":"n"}}}}`,
		`{"method":"query","params":{"input":[1,2,{"x":null}],"path":"kb.page"},"id":"abc"}`,
		` { "id" : 12 , "method" : "mutation" , "params" : { "path" : "kb.command" , "input" : "s" } } `,
		`{"id":-3,"method":"query","params":{"path":"kb.whoami"}}`,
		`{"id":1,"method":"subscription","params":{"path":"kb.onPage","input":{"page_id":"p"},"lastEventId":"4"}}`,
		`{"id":1.5,"method":"query","params":{"path":"kb.whoami","input":null}}`,
		`{"id":007,"method":"query","params":{"path":"kb.whoami","input":null}}`,
		`{"id":"a\u0062","method":"query","params":{"path":"kb.whoami","input":null}}`,
		`{"id":1,"id":2,"method":"query","params":{"path":"kb.whoami","input":null}}`,
		`{"id":1,"method":"subscription.stop"}`,
		`{"id":1,"method":"query","params":null}`,
		`{"id":1,"method":"query","params":{"path":"kb.whoami","input":{]}}`,
		`{"id":1,"method":"query","params":{"path":"kb.whoami","input":1}} x`,
		`{"id":1,"method":"query","params":{"path":"kb.whoami","extra":1}}`,
		`{"id":1,"method":"","params":{"path":"kb.whoami"}}`,
		`[{"id":1,"method":"query","params":{"path":"kb.whoami"}}]`,
	} {
		fast, ok := plainWSMessage([]byte(msg))
		var slow wsMessage
		cerr := decodeStrict(json.RawMessage(msg), &slow)
		if !ok {
			continue
		}
		if cerr != nil || !json.Valid([]byte(msg)) {
			t.Errorf("%s: read by the fast path, refused by the reflective one (%v)", msg, cerr)
			continue
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Errorf("%s:\nfast %s\nslow %s", msg, mustJSON(fast), mustJSON(slow))
		}
	}
	for _, msg := range []string{
		`{"id":1,"method":"mutation","params":{"path":"kb.command","input":{}}}`,
		`{"method":"query","params":{"input":[1,2,{"x":null}],"path":"kb.page"},"id":"abc"}`,
	} {
		if _, ok := plainWSMessage([]byte(msg)); !ok {
			t.Errorf("%s: not read by the fast path", msg)
		}
	}
}

// requestID accepts exactly the ids json.Unmarshal reads as a string or a
// number (a float64).
func TestRequestID(t *testing.T) {
	for _, id := range []string{`1`, `-1`, `1.5`, `2e3`, `1e400`, `01`, `-`, ` 7 `, `"a"`, `"a\u0062"`, `"a\x"`, `"bad`, `""`,
		`null`, `true`, `{}`, `[]`, `1 2`, `"a" "b"`} {
		var v any
		want := false
		if err := json.Unmarshal([]byte(id), &v); err == nil {
			switch v.(type) {
			case string, float64:
				want = true
			}
		}
		got, ok := requestID(json.RawMessage(id))
		if ok != want || (ok && got != strings.TrimSpace(id)) {
			t.Errorf("%s: %q %v, want %v", id, got, ok, want)
		}
	}
}

// commandReply writes what the reflective encoding of the reply writes,
// or declines.
func TestCommandReply(t *testing.T) {
	for _, id := range []string{`7`, `123456789012345678`, `"a"`, `-1`, `1.5`} {
		for _, r := range []wire.CommandResult{{Seq: 3}, {Seq: 9007199254740993, Duplicate: true}} {
			m := wsMessage{ID: json.RawMessage(id)}
			fast := commandReply(m, r)
			if fast == nil {
				continue
			}
			slow, err := marshalWire(wsResponse{ID: m.ID, Result: &wsResult{Type: "data", Data: r}})
			if err != nil || string(fast) != string(slow) {
				t.Errorf("id %s, %+v: %s, want %s (%v)", id, r, fast, slow, err)
			}
		}
	}
	if commandReply(wsMessage{ID: json.RawMessage(`7`)}, wire.CommandResult{Seq: 3}) == nil {
		t.Error("a numeric id is not written by the fast path")
	}
}
