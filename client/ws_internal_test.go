package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/subspace/kbkit/internal/wsframe"
)

// TestRawWS: the client's own WebSocket reads what a coder/websocket
// server writes (small, 16- and 64-bit lengths, fragmented messages),
// answers pings, sends masked messages the server reads, and ends with
// the server's close.
func TestRawWS(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 70_000)
	mid := bytes.Repeat([]byte("y"), 300)
	got := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" || r.URL.Path != "/trpc" {
			http.Error(w, "no", 401)
			return
		}
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, m, err := c.Read(ctx)
		if err != nil {
			return
		}
		got <- string(m)
		_ = c.Write(ctx, websocket.MessageText, []byte("small"))
		_ = c.Write(ctx, websocket.MessageText, mid)
		_ = c.Write(ctx, websocket.MessageText, big)
		wr, _ := c.Writer(ctx, websocket.MessageText)
		wr.Write([]byte("frag"))
		wr.Write([]byte("mented")) // coder/websocket writes each Write as a frame
		wr.Close()
		go func() { // Ping needs a reader to see the pong
			for {
				if _, _, err := c.Read(ctx); err != nil {
					return
				}
			}
		}()
		if err := c.Ping(ctx); err != nil {
			got <- "ping: " + err.Error()
		} else {
			got <- "pong"
		}
		_ = c.Write(ctx, websocket.MessageText, []byte("after ping"))
		c.Close(websocket.StatusGoingAway, "bye")
	}))
	defer srv.Close()
	ctx := context.Background()
	ws, err := dialWS(ctx, srv.URL, http.Header{"Authorization": {"Bearer tok"}}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ws.(*rawWS); !ok {
		t.Fatalf("plain http: %T", ws)
	}
	if err := ws.write(ctx, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if m := <-got; m != "hello" {
		t.Fatalf("server read %q", m)
	}
	buf := make([]byte, 0, 16)
	for _, want := range [][]byte{[]byte("small"), mid, big, []byte("fragmented"), []byte("after ping")} {
		m, err := ws.read(buf)
		if err != nil || !bytes.Equal(m, want) {
			t.Fatalf("read %.20q (%d bytes), %v; want %.20q (%d bytes)", m, len(m), err, want, len(want))
		}
	}
	if m := <-got; m != "pong" {
		t.Fatal(m)
	}
	if _, err := ws.read(buf); !errors.Is(err, errWSClosed) || !strings.Contains(err.Error(), "1001") {
		t.Fatalf("after the close: %v", err)
	}
	ws.close("")
	if _, err := dialWS(ctx, srv.URL, nil, 1<<20); err == nil {
		t.Fatal("a refused handshake dialed")
	}
}

// BenchmarkWSRead is the client's own WebSocket reading one event
// message from a buffer of frames as a server writes them: the work per
// message above the socket read (coder/websocket's, the only reader
// before, is not measurable apart from its connection; in the fan-out
// profile it was about 2.5 µs per message above the read, this one 0.6).
func BenchmarkWSRead(b *testing.B) {
	frame := wsframe.AppendFrame(nil, wsframe.OpText, benchEvent, nil)
	frames := bytes.Repeat(frame, 4096)
	r := bytes.NewReader(frames)
	ws := newRawWS(nil, nil, 1<<20)
	ws.fr.Src = r
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%4096 == 0 {
			r.Reset(frames)
		}
		m, err := ws.read(buf)
		if err != nil || len(m) != len(benchEvent) {
			b.Fatal(err)
		}
		buf = m[:0]
	}
}

// BenchmarkWSWrite is the client's own WebSocket writing one masked
// kb.command-sized text message to a loopback socket.
func BenchmarkWSWrite(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, _ = io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	ws := newRawWS(nc, nil, 1<<20)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := ws.write(ctx, benchEvent); err != nil {
			b.Fatal(err)
		}
	}
}
