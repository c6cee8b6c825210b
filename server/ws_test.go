package server

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subspace/kbkit/wire"

	"github.com/coder/websocket"

	"github.com/subspace/kbkit/internal/wsframe"
	"github.com/subspace/kbkit/server/dispatch"
	"github.com/subspace/kbkit/server/pgprovider"
)

// rawWS is a hand-made WebSocket client on a plain TCP connection: it
// holds no goroutine, and sends frames exactly as told.
type rawWS struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

// dialRaw opens a socket with the Authorization header. readBuf, if not
// 0, is the TCP receive buffer (a small one makes a slow reader).
func dialRaw(t *testing.T, base, token string, readBuf int) *rawWS {
	t.Helper()
	addr := strings.TrimPrefix(base, "http://")
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	if readBuf > 0 {
		_ = nc.(*net.TCPConn).SetReadBuffer(readBuf)
	}
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	req := "GET /trpc HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + base64.StdEncoding.EncodeToString(key) + "\r\n" +
		"Authorization: Bearer " + token + "\r\n\r\n"
	if _, err := nc.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(nc)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: HTTP %d", res.StatusCode)
	}
	return &rawWS{t: t, nc: nc, br: br}
}

// frame writes one masked frame.
func (w *rawWS) frame(fin bool, op byte, payload []byte) {
	w.t.Helper()
	if _, err := w.nc.Write(wsframe.AppendMasked(nil, fin, op, [4]byte{1, 2, 3, 4}, payload)); err != nil {
		w.t.Fatal(err)
	}
}

func (w *rawWS) send(v any) {
	w.t.Helper()
	b, _ := json.Marshal(v)
	w.frame(true, wsframe.OpText, b)
}

// read reads one server frame (they are never fragmented nor masked).
func (w *rawWS) read() (byte, []byte) {
	w.t.Helper()
	_ = w.nc.SetReadDeadline(time.Now().Add(15 * time.Second))
	b, err := w.br.Peek(2)
	if err == nil {
		b, err = w.br.Peek(wsframe.HeaderLen(b[0], b[1]))
	}
	if err != nil {
		w.t.Fatalf("reading a frame: %v", err)
	}
	h, n := wsframe.ParseHeader(b)
	if !h.Fin || h.Masked {
		w.t.Fatalf("a server frame must be final and unmasked: % x", b)
	}
	_, _ = w.br.Discard(n)
	p := make([]byte, h.Length)
	if _, err := io.ReadFull(w.br, p); err != nil {
		w.t.Fatalf("reading a frame: %v", err)
	}
	return h.Op, p
}

// reply reads the next text message.
func (w *rawWS) reply() wsReply {
	w.t.Helper()
	op, p := w.read()
	if op != wsframe.OpText {
		w.t.Fatalf("want a text frame, got opcode %d (%q)", op, p)
	}
	return decode[wsReply](w.t, p)
}

func (w *rawWS) subscribe(id int, page string, after int64) {
	w.t.Helper()
	w.send(map[string]any{"id": id, "method": "subscription", "params": map[string]any{"path": wire.PathOnPage,
		"input": map[string]any{"page_id": page}, "lastEventId": fmt.Sprint(after)}})
}

// events reads n messages and returns the seqs per subscription id.
func (w *rawWS) events(n int) map[string][]int64 {
	w.t.Helper()
	got := map[string][]int64{}
	for range n {
		r := w.reply()
		if r.Result == nil || r.Result.Type != "data" {
			w.t.Fatalf("want an event, got %s", mustJSON(r))
		}
		ev := decode[wire.PageEvent](w.t, r.Result.Data)
		got[string(r.ID)] = append(got[string(r.ID)], ev.Seq)
	}
	return got
}

func wantSeqs(t *testing.T, what string, got []int64, first, last int64) {
	t.Helper()
	if int64(len(got)) != last-first+1 {
		t.Fatalf("%s: want seqs %d..%d, got %v", what, first, last, got)
	}
	for i, s := range got {
		if s != first+int64(i) {
			t.Fatalf("%s: want seqs %d..%d in order, got %v", what, first, last, got)
		}
	}
}

// Idle subscribed sockets hold one goroutine each (the read loop): no
// goroutine per subscription, no writer while nothing is queued.
func TestWSIdleSocketsHoldOneGoroutineEach(t *testing.T) {
	in := newInstance(t, pgprovider.ForTest(t), Options{})
	c := pair(t, in, "acme")
	page := c.newPage()
	// The goroutines parked for the sockets' next bursts
	// (internal/taskpool) are the server's, not the sockets'.
	held := func() int { return runtime.NumGoroutine() - in.srv.tasks.Parked() }
	settle := func() int {
		var n int
		for range 50 {
			runtime.GC()
			n = held()
			time.Sleep(20 * time.Millisecond)
			if held() == n {
				break
			}
		}
		return n
	}
	before := settle()
	const sockets, subs = 40, 3
	for range sockets {
		w := dialRaw(t, in.ts.URL, c.dev.Token, 0)
		for id := 1; id <= subs; id++ {
			w.subscribe(id, page, 1) // replays seq 2: the subscription is live once it arrives
			if r := w.reply(); r.Result == nil || r.Result.Type != "started" {
				t.Fatalf("want started, got %s", mustJSON(r))
			}
			w.events(1)
		}
	}
	if got := in.hub.Subscribers(); got != sockets*subs {
		t.Fatalf("hub: %d subscribers, want %d", got, sockets*subs)
	}
	after := settle()
	if d := after - before; d > sockets+2 {
		t.Fatalf("%d idle sockets with %d subscriptions each hold %d goroutines (%d -> %d): want at most one each",
			sockets, subs, d, before, after)
	}
}

// Events queued together leave in one write, and every subscription of
// a socket gets every event in order.
func TestWSBatchedWritesKeepOrder(t *testing.T) {
	in := newInstance(t, pgprovider.ForTest(t), Options{})
	c := pair(t, in, "acme")
	page := c.newPage()
	w := dialRaw(t, in.ts.URL, c.dev.Token, 0)
	const subs, n = 8, 30
	for id := 1; id <= subs; id++ {
		w.subscribe(id, page, 2)
		if r := w.reply(); r.Result == nil || r.Result.Type != "started" {
			t.Fatalf("want started, got %s", mustJSON(r))
		}
	}
	writes, frames := wsWrites.Load(), wsFrames.Load()
	for i := range n {
		c.mustCommit(page, "edit-text", map[string]any{"node": "n", "text": fmt.Sprint(i)})
	}
	got := w.events(subs * n)
	for id := 1; id <= subs; id++ {
		wantSeqs(t, fmt.Sprintf("subscription %d", id), got[fmt.Sprint(id)], 3, 2+n)
	}
	dw, df := wsWrites.Load()-writes, wsFrames.Load()-frames
	t.Logf("%d frames in %d writes", df, dw)
	if df < subs*n || dw*2 > df {
		t.Fatalf("%d frames in %d writes: the %d subscriptions' frames of one event should share a write", df, dw, subs)
	}
	// /metrics tells the same counts (spec/PROTOCOL.md section 9).
	_, m := c.do("GET", "/metrics", nil, "")
	for name, least := range map[string]int64{"kbkit_websocket_writes_total": writes + dw, "kbkit_websocket_frames_total": frames + df} {
		if v := metricValue(t, m, name); v < float64(least) {
			t.Errorf("/metrics has %s %v, want at least %d", name, v, least)
		}
	}
}

// A socket that does not read does not hold up the others; once it
// reads again it gets every event, in order, without a gap (its
// subscription was dropped as slow and resubscribed from its last seq).
func TestWSSlowReaderDoesNotStallOthers(t *testing.T) {
	// Buffer(1): a connection queues at most 4 messages before a live
	// event makes its subscription slow.
	in := newInstance(t, pgprovider.ForTest(t), Options{WriteTimeout: time.Minute}, dispatch.Buffer(1))
	c := pair(t, in, "acme")
	page := c.newPage()
	slow := dialRaw(t, in.ts.URL, c.dev.Token, 128<<10)
	fast := dialRaw(t, in.ts.URL, c.dev.Token, 0)
	for _, w := range []*rawWS{slow, fast} {
		w.subscribe(1, page, 2)
		if r := w.reply(); r.Result == nil || r.Result.Type != "started" {
			t.Fatalf("want started, got %s", mustJSON(r))
		}
	}
	// Small kernel buffers on the slow socket's server side, so that its
	// writer blocks soon.
	in.srv.mu.Lock()
	for sc := range in.srv.conns {
		if sc.ws.nc.RemoteAddr().String() == slow.nc.LocalAddr().String() {
			_ = sc.ws.nc.(*net.TCPConn).SetWriteBuffer(8 << 10)
		}
	}
	in.srv.mu.Unlock()
	resub := in.srv.resubscribes.Load()
	// Far more than the slow socket's buffers hold: 300 events of 4 KB.
	const n = 300
	text := strings.Repeat("x", 4<<10)
	var wg sync.WaitGroup
	for k := range 4 {
		wg.Go(func() {
			for i := range n / 4 {
				c.mustCommit(page, "edit-text", map[string]any{"node": "n", "text": fmt.Sprint(k, i, text)})
			}
		})
	}
	start := time.Now()
	wantSeqs(t, "the fast socket", fast.events(n)["1"], 3, 2+n)
	wg.Wait()
	t.Logf("the fast socket read %d events in %s while the slow one did not read", n, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	wantSeqs(t, "the slow socket", slow.events(n)["1"], 3, 2+n)
	t.Logf("then the slow socket read them in %s", time.Since(start).Round(time.Millisecond))
	if in.srv.resubscribes.Load() == resub {
		t.Error("the slow socket was never dropped as slow: the test did not test anything")
	}
}

// A client that stops reading is disconnected after WriteTimeout.
func TestWSWriteTimeout(t *testing.T) {
	in := newInstance(t, pgprovider.ForTest(t), Options{WriteTimeout: 300 * time.Millisecond})
	c := pair(t, in, "acme")
	page := c.newPage()
	w := dialRaw(t, in.ts.URL, c.dev.Token, 4096)
	w.subscribe(1, page, 2)
	if r := w.reply(); r.Result == nil || r.Result.Type != "started" {
		t.Fatalf("want started, got %s", mustJSON(r))
	}
	text := strings.Repeat("y", 50<<10)
	deadline := time.Now().Add(time.Minute) // a hang detector
	for time.Now().Before(deadline) {
		c.mustCommit(page, "edit-text", map[string]any{"node": "n", "text": text})
		in.srv.mu.Lock()
		open := len(in.srv.conns)
		in.srv.mu.Unlock()
		if open == 0 {
			return
		}
	}
	t.Fatal("a socket that does not read was not disconnected")
}

// The frame layer: a fragmented message with a ping in between is one
// message (and the ping is answered); an unmasked frame closes with
// 1002; a close frame is answered with the same status.
func TestWSFrames(t *testing.T) {
	in := newInstance(t, pgprovider.ForTest(t), Options{})
	c := pair(t, in, "acme")
	w := dialRaw(t, in.ts.URL, c.dev.Token, 0)
	msg := []byte(`{"id":"f","method":"query","params":{"path":"kb.whoami","input":{}}}`)
	w.frame(false, wsframe.OpText, msg[:10])
	w.frame(true, wsframe.OpPing, []byte("hi"))
	w.frame(false, wsframe.OpContinuation, msg[10:30])
	w.frame(true, wsframe.OpContinuation, msg[30:])
	if op, p := w.read(); op != wsframe.OpPong || string(p) != "hi" {
		t.Fatalf("want pong \"hi\", got opcode %d %q", op, p)
	}
	if r := w.reply(); string(r.ID) != `"f"` || r.Result == nil {
		t.Fatalf("want the whoami answer, got %s", mustJSON(r))
	}
	w.frame(true, wsframe.OpText, []byte("PING"))
	if _, p := w.read(); string(p) != "PONG" {
		t.Fatalf("want PONG, got %q", p)
	}
	w.frame(true, wsframe.OpClose, []byte{0x03, 0xe8, 'b', 'y', 'e'})
	if op, p := w.read(); op != wsframe.OpClose || binary.BigEndian.Uint16(p) != 1000 {
		t.Fatalf("want close 1000, got opcode %d %q", op, p)
	}

	// An unmasked frame, through a real client's connection.
	w2 := dialRaw(t, in.ts.URL, c.dev.Token, 0)
	if _, err := w2.nc.Write([]byte{0x81, 0x02, 'h', 'i'}); err != nil {
		t.Fatal(err)
	}
	if op, p := w2.read(); op != wsframe.OpClose || websocket.StatusCode(binary.BigEndian.Uint16(p)) != websocket.StatusProtocolError {
		t.Fatalf("want close 1002, got opcode %d %q", op, p)
	}

	// A message over the limit in two fragments: close 1009; what follows
	// is skipped until the client's close frame, which ends the connection.
	w3 := dialRaw(t, in.ts.URL, c.dev.Token, 0)
	big := []byte(strings.Repeat("z", DefaultMaxBody/2+1))
	w3.frame(false, wsframe.OpText, big)
	w3.frame(true, wsframe.OpContinuation, big)
	if op, p := w3.read(); op != wsframe.OpClose || websocket.StatusCode(binary.BigEndian.Uint16(p)) != websocket.StatusMessageTooBig {
		t.Fatalf("want close 1009, got opcode %d %q", op, p)
	}
	w3.frame(true, wsframe.OpText, []byte("PING")) // ignored: closing
	w3.frame(true, wsframe.OpClose, []byte{0x03, 0xf1})
	_ = w3.nc.SetReadDeadline(time.Now().Add(time.Minute)) // the EOF ends the read; a hang detector
	if n, err := w3.br.Read(make([]byte, 16)); err != io.EOF {
		t.Fatalf("after the close handshake: read %d bytes, %v; want EOF", n, err)
	}
}

// The server's memory per idle subscribed socket (heap and goroutine
// stacks, after a GC): a bound well under the 20 KB of RSS per window
// the benchmark asks for (scripts/bench-server.sh, idle phase).
func TestWSIdleSocketMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's own memory would be measured")
	}
	in := newInstance(t, pgprovider.ForTest(t), Options{})
	c := pair(t, in, "acme")
	page := c.newPage()
	measure := func() (heap, stack uint64) {
		var ms runtime.MemStats
		for range 3 {
			runtime.GC()
		}
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc, ms.StackInuse
	}
	// The clients' own share (a TCP connection and a tiny buffer each)
	// is counted in: it errs on the safe side.
	const sockets = 300
	heap0, stack0 := measure()
	ws := make([]*rawWS, 0, sockets)
	for range sockets {
		w := dialRaw(t, in.ts.URL, c.dev.Token, 0)
		w.br = bufio.NewReaderSize(w.nc, 16) // the client's buffer out of the figure (the handshake is read)
		w.subscribe(1, page, 1)
		if r := w.reply(); r.Result == nil || r.Result.Type != "started" {
			t.Fatalf("want started, got %s", mustJSON(r))
		}
		w.events(1)
		ws = append(ws, w)
	}
	heap1, stack1 := measure()
	perHeap := (int64(heap1) - int64(heap0)) / sockets
	perStack := (int64(stack1) - int64(stack0)) / sockets
	t.Logf("per idle subscribed socket: %d bytes of heap, %d bytes of goroutine stack", perHeap, perStack)
	if perHeap+perStack > 12<<10 {
		t.Errorf("an idle subscribed socket costs %d bytes of heap and %d of stack: want at most 12 KB", perHeap, perStack)
	}
	runtime.KeepAlive(ws)
}
