package wsframe

// Differential tests against github.com/coder/websocket over loopback
// sockets, one for each category of the Autobahn testsuite's sections 1-7
// and 9: frames this codec writes are read by coder/websocket, and frames
// coder/websocket writes are read by this codec's Reader, with this codec
// as the server (coder/websocket dials) and as the client (coder/websocket
// accepts).

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
)

const guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// peer is this codec's end of a connection.
type peer struct {
	t  *testing.T
	nc net.Conn
	fr *Reader
	// pings and pongs seen by the reader
	pings, pongs [][]byte
	server       bool // frames written unmasked
}

func (p *peer) write(fin bool, op byte, payload []byte) {
	p.t.Helper()
	var b []byte
	if p.server {
		b = AppendHeader(nil, Header{Fin: fin, Op: op, Length: uint64(len(payload))})
		b = append(b, payload...)
	} else {
		b = AppendMasked(nil, fin, op, [4]byte{0xa1, 0xb2, 0xc3, 0xd4}, payload)
	}
	if _, err := p.nc.Write(b); err != nil {
		p.t.Fatal(err)
	}
}

// control records pings and pongs, and answers pings.
func (p *peer) control(op byte, b []byte) {
	if op == OpPing {
		p.pings = append(p.pings, bytes.Clone(b))
		p.write(true, OpPong, b)
	} else {
		p.pongs = append(p.pongs, bytes.Clone(b))
	}
}

func (p *peer) writeRaw(b []byte) {
	p.t.Helper()
	if _, err := p.nc.Write(b); err != nil {
		p.t.Fatal(err)
	}
}

func (p *peer) next() (byte, []byte, *Error) {
	_ = p.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	return p.fr.Next(nil)
}

// withCoderClient runs this codec as the server of a coder/websocket
// client on a loopback socket.
func withCoderClient(t *testing.T, limit int64) (*peer, *websocket.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got := make(chan *peer, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			close(got)
			return
		}
		br := bufio.NewReader(nc)
		req, err := http.ReadRequest(br)
		if err != nil {
			nc.Close()
			close(got)
			return
		}
		sum := sha1.Sum([]byte(req.Header.Get("Sec-WebSocket-Key") + guid))
		_, _ = io.WriteString(nc, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "+
			base64.StdEncoding.EncodeToString(sum[:])+"\r\n\r\n")
		pre, _ := br.Peek(br.Buffered())
		got <- &peer{nc: nc, server: true, fr: &Reader{Src: nc, Pre: bytes.Clone(pre), Limit: limit, MustMask: true}}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws://"+ln.Addr().String()+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	p := <-got
	if p == nil {
		t.Fatal("no connection")
	}
	p.t = t
	p.fr.Control = p.control
	t.Cleanup(func() { p.nc.Close() })
	return p, c
}

// withCoderServer runs this codec as the client of a coder/websocket
// server on a loopback socket; the server runs serve.
func withCoderServer(t *testing.T, limit int64, serve func(c *websocket.Conn)) *peer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		serve(c)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	var key [16]byte
	_, _ = rand.Read(key[:])
	k := base64.StdEncoding.EncodeToString(key[:])
	_, _ = io.WriteString(nc, "GET / HTTP/1.1\r\nHost: "+ln.Addr().String()+"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: "+k+"\r\nSec-WebSocket-Version: 13\r\n\r\n")
	br := bufio.NewReader(nc)
	res, err := http.ReadResponse(br, nil)
	sum := sha1.Sum([]byte(k + guid))
	if err != nil || res.StatusCode != 101 || res.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) {
		t.Fatalf("handshake: %v %v", res, err)
	}
	pre, _ := br.Peek(br.Buffered())
	p := &peer{t: t, nc: nc, fr: &Reader{Src: nc, Pre: bytes.Clone(pre), Limit: limit}}
	p.fr.Control = p.control
	return p
}

func ctx10(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// coderRead is coder/websocket's next message, or its error.
func coderRead(t *testing.T, c *websocket.Conn) (websocket.MessageType, []byte, error) {
	return c.Read(ctx10(t))
}

var lengths = []int{0, 1, 125, 126, 127, 65535, 65536, 1 << 20}

// Autobahn 1: text and binary messages of every header length, both ways,
// with this codec as server and as client (whose frames coder/websocket,
// as a server, requires masked).
func TestDiffFraming(t *testing.T) {
	p, c := withCoderClient(t, 4<<20)
	c.SetReadLimit(4 << 20)
	for _, n := range lengths {
		for _, op := range []byte{OpText, OpBinary} {
			msg := bytes.Repeat([]byte{'a' + byte(n%26)}, n)
			p.write(true, op, msg)
			typ, got, err := coderRead(t, c)
			if err != nil || int(typ) != int(op) || !bytes.Equal(got, msg) {
				t.Fatalf("ours -> coder, %d bytes op %d: %v %d bytes, %v", n, op, typ, len(got), err)
			}
			if err := c.Write(ctx10(t), websocket.MessageType(op), msg); err != nil {
				t.Fatal(err)
			}
			gop, got2, ferr := p.next()
			if ferr != nil || gop != op || !bytes.Equal(got2, msg) {
				t.Fatalf("coder -> ours, %d bytes op %d: %d %d bytes, %v", n, op, gop, len(got2), ferr)
			}
		}
	}
	// As a client: masked frames coder/websocket accepts, and its
	// unmasked ones read.
	echo := func(c *websocket.Conn) {
		c.SetReadLimit(4 << 20)
		for {
			typ, m, err := c.Read(context.Background())
			if err != nil {
				return
			}
			if err := c.Write(context.Background(), typ, m); err != nil {
				return
			}
		}
	}
	q := withCoderServer(t, 4<<20, echo)
	for _, n := range lengths {
		msg := bytes.Repeat([]byte("xyz"), n/3)
		q.write(true, OpBinary, msg)
		op, got, err := q.next()
		if err != nil || op != OpBinary || !bytes.Equal(got, msg) {
			t.Fatalf("client echo of %d bytes: %d, %d bytes, %v", len(msg), op, len(got), err)
		}
	}
}

type coderMsg struct {
	typ websocket.MessageType
	b   []byte
	err error
}

// coderReads reads coder/websocket's messages in a goroutine (it answers
// pings and sees pongs only while it reads).
func coderReads(c *websocket.Conn) <-chan coderMsg {
	ch := make(chan coderMsg, 16)
	go func() {
		for {
			typ, b, err := c.Read(context.Background())
			ch <- coderMsg{typ, b, err}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

func recv(t *testing.T, ch <-chan coderMsg) coderMsg {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(time.Minute): // a hang detector
		t.Fatal("coder/websocket read nothing")
	}
	return coderMsg{}
}

// Autobahn 2: pings answered with their payload, both ways.
func TestDiffPingPong(t *testing.T) {
	p, c := withCoderClient(t, 1<<20)
	msgs := coderReads(c)
	// coder/websocket pings: our reader answers while it reads.
	pinged := make(chan error, 1)
	go func() { pinged <- c.Ping(ctx10(t)) }()
	go func() {
		if err := <-pinged; err == nil {
			_ = c.Write(context.Background(), websocket.MessageText, []byte("after ping"))
		}
	}()
	if op, m, err := p.next(); err != nil || op != OpText || string(m) != "after ping" || len(p.pings) != 1 {
		t.Fatalf("%d %q %v, %d pings", op, m, err, len(p.pings))
	}
	// Our ping, with a payload of 0 and of 125 bytes: coder/websocket
	// answers with the same payload.
	for _, n := range []int{0, 125} {
		payload := bytes.Repeat([]byte{'p'}, n)
		p.write(true, OpPing, payload)
		p.write(true, OpText, []byte("echo"))
		if m := recv(t, msgs); m.err != nil || string(m.b) != "echo" {
			t.Fatalf("coder: %q %v", m.b, m.err)
		}
		if err := c.Write(ctx10(t), websocket.MessageText, []byte("x")); err != nil {
			t.Fatal(err)
		}
		if _, _, err := p.next(); err != nil || len(p.pongs) == 0 || !bytes.Equal(p.pongs[len(p.pongs)-1], payload) {
			t.Fatalf("pong for %d bytes: %v %q", n, err, p.pongs)
		}
	}
	// A ping of 126 bytes is refused by coder/websocket.
	p.writeRaw(append(AppendHeader(nil, Header{Fin: true, Op: OpPing, Length: 126}), make([]byte, 126)...))
	if m := recv(t, msgs); m.err == nil {
		t.Fatal("coder/websocket took a 126-byte ping")
	}
	if _, _, err := p.next(); err == nil || err.Err != io.EOF || err.Code != StatusProtocolError {
		t.Fatalf("want coder's close 1002, got %v", err)
	}
}

// Autobahn 3: a reserved bit without an extension is a protocol error on
// either side.
func TestDiffReservedBits(t *testing.T) {
	for _, rsv := range []byte{0x40, 0x20, 0x10, 0x70} {
		p, c := withCoderClient(t, 1<<20)
		msgs := coderReads(c)
		p.writeRaw(append(AppendHeader(nil, Header{Fin: true, RSV: rsv, Op: OpText, Length: 2}), "hi"...))
		if m := recv(t, msgs); m.err == nil {
			t.Fatalf("rsv %#x: coder/websocket read %q", rsv, m.b)
		}
		if _, _, err := p.next(); err == nil || err.Code != StatusProtocolError {
			t.Fatalf("rsv %#x: want coder's close 1002, got %v", rsv, err)
		}
		// Our reader refuses the same frame (masked, from a client).
		fr := &Reader{Src: bytes.NewReader(nil), Pre: AppendMasked(nil, true, OpText, [4]byte{1, 2, 3, 4}, []byte("hi")), Limit: 10, MustMask: true}
		fr.Pre[0] |= rsv
		if _, _, err := fr.Next(nil); err == nil || err.Code != StatusProtocolError {
			t.Fatalf("rsv %#x: our reader: %v", rsv, err)
		}
	}
}

// Autobahn 4: reserved opcodes, data (3-7) and control (11-15), are
// protocol errors for both.
func TestDiffOpcodes(t *testing.T) {
	for _, op := range []byte{3, 4, 5, 6, 7, 11, 12, 13, 14, 15} {
		p, c := withCoderClient(t, 1<<20)
		msgs := coderReads(c)
		p.write(true, op, []byte("x"))
		if m := recv(t, msgs); m.err == nil {
			t.Fatalf("opcode %d: coder/websocket read %q", op, m.b)
		}
		if _, _, err := p.next(); err == nil || err.Code != StatusProtocolError {
			t.Fatalf("opcode %d: want coder's close 1002, got %v", op, err)
		}
		fr := &Reader{Src: bytes.NewReader(nil), Pre: AppendMasked(nil, true, op, [4]byte{1, 2, 3, 4}, []byte("x")), Limit: 10, MustMask: true}
		if _, _, err := fr.Next(nil); err == nil || err.Code != StatusProtocolError {
			t.Fatalf("opcode %d: our reader: %v", op, err)
		}
	}
}

// Autobahn 5: fragmented messages with control frames between the
// fragments, both ways; a continuation with no message, a new message
// inside one, and a fragmented control frame refused by both.
func TestDiffFragmentation(t *testing.T) {
	p, c := withCoderClient(t, 1<<20)
	msgs := coderReads(c)
	p.write(false, OpText, []byte("frag"))
	p.write(true, OpPing, []byte("between"))
	p.write(false, OpContinuation, []byte("men"))
	p.write(false, OpContinuation, nil)
	p.write(true, OpContinuation, []byte("ted"))
	if m := recv(t, msgs); m.err != nil || m.typ != websocket.MessageText || string(m.b) != "fragmented" {
		t.Fatalf("coder read %q %v", m.b, m.err)
	}
	// coder/websocket fragments: each Write of a Writer is a frame.
	w, err := c.Writer(ctx10(t), websocket.MessageBinary)
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{"one", "", "two", "three"} {
		_, _ = w.Write([]byte(part))
	}
	_ = w.Close()
	if op, m, err := p.next(); err != nil || op != OpBinary || string(m) != "onetwothree" || len(p.pongs) != 1 || string(p.pongs[0]) != "between" {
		t.Fatalf("ours read %d %q %v, pongs %q", op, m, err, p.pongs)
	}
	for i, frames := range []func(p *peer){
		func(p *peer) { p.write(true, OpContinuation, []byte("x")) },
		func(p *peer) { p.write(false, OpText, []byte("x")); p.write(true, OpText, []byte("y")) },
		func(p *peer) { p.write(false, OpPing, []byte("x")) },
	} {
		p, c := withCoderClient(t, 1<<20)
		msgs := coderReads(c)
		frames(p)
		if m := recv(t, msgs); m.err == nil {
			t.Fatalf("case %d: coder/websocket read %q", i, m.b)
		}
		if _, _, err := p.next(); err == nil || err.Code != StatusProtocolError {
			t.Fatalf("case %d: want coder's close 1002, got %v", i, err)
		}
	}
	// Our reader refuses the same sequences.
	key := [4]byte{5, 6, 7, 8}
	for i, pre := range [][]byte{
		AppendMasked(nil, true, OpContinuation, key, []byte("x")),
		AppendMasked(AppendMasked(nil, false, OpText, key, []byte("x")), true, OpText, key, []byte("y")),
		AppendMasked(nil, false, OpPing, key, []byte("x")),
	} {
		fr := &Reader{Src: bytes.NewReader(nil), Pre: pre, Limit: 10, MustMask: true}
		if _, _, err := fr.Next(nil); err == nil || err.Code != StatusProtocolError {
			t.Fatalf("case %d: our reader: %v", i, err)
		}
	}
}

// Autobahn 6: text payloads are carried byte for byte, a character split
// across fragments included; whether a text message is valid UTF-8 is
// decided on the whole message (utf8.Valid), and a close reason that is
// not UTF-8 is refused with 1007.
func TestDiffUTF8(t *testing.T) {
	p, c := withCoderClient(t, 1<<20)
	msgs := coderReads(c)
	text := []byte("κόσμε 😀 ok")
	for split := 0; split <= len(text); split++ {
		p.write(false, OpText, text[:split])
		p.write(true, OpContinuation, text[split:])
		if m := recv(t, msgs); m.err != nil || !bytes.Equal(m.b, text) {
			t.Fatalf("split %d: coder read %q %v", split, m.b, m.err)
		}
		w, _ := c.Writer(ctx10(t), websocket.MessageText)
		_, _ = w.Write(text[:split])
		_, _ = w.Write(text[split:])
		_ = w.Close()
		if _, m, err := p.next(); err != nil || !bytes.Equal(m, text) || !utf8.Valid(m) {
			t.Fatalf("split %d: ours read %q %v", split, m, err)
		}
	}
	bad := []byte("ok \xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\xed\xa0\x80") // a surrogate encoded: not UTF-8
	if err := c.Write(ctx10(t), websocket.MessageText, bad); err != nil {
		t.Fatal(err)
	}
	if _, m, err := p.next(); err != nil || !bytes.Equal(m, bad) || utf8.Valid(m) {
		t.Fatalf("invalid UTF-8: ours read %q %v", m, err)
	}
	go func() { _ = c.Close(websocket.StatusNormalClosure, "bye") }()
	if _, _, err := p.next(); err == nil || err.Err != io.EOF || err.Code != StatusNormalClosure || err.Reason != "bye" {
		t.Fatalf("coder's close: %v", err)
	}
	fr := &Reader{Src: bytes.NewReader(nil), Pre: AppendMasked(nil, true, OpClose, [4]byte{1, 1, 1, 1}, []byte{3, 0xe8, 0xff}), Limit: 10, MustMask: true}
	if _, _, err := fr.Next(nil); err == nil || err.Code != StatusInvalidFramePayloadData {
		t.Fatalf("a close reason not UTF-8: %v", err)
	}
}

// Autobahn 7: close codes. What coder/websocket accepts from us is what
// ValidCloseCode says, and the status and reason it sends reach our
// reader; invalid codes end coder/websocket's read with a protocol error.
func TestDiffClose(t *testing.T) {
	codes := []uint16{0, 999, 1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1010, 1011, 1012, 1013, 1014, 1015, 1016, 1100, 2000, 2999, 3000, 3999, 4000, 4999, 5000, 65535}
	for _, code := range codes {
		p, c := withCoderClient(t, 1<<20)
		msgs := coderReads(c)
		p.write(true, OpClose, append(binary.BigEndian.AppendUint16(nil, code), "why"...))
		m := recv(t, msgs)
		status := websocket.CloseStatus(m.err)
		if ValidCloseCode(code) != (status == websocket.StatusCode(code)) {
			t.Fatalf("close %d: coder/websocket says %v (status %d), ValidCloseCode %v", code, m.err, status, ValidCloseCode(code))
		}
		_, _, err := p.next()
		if ValidCloseCode(code) && (err == nil || err.Err != io.EOF || err.Code != code) {
			t.Fatalf("close %d: coder's echo: %v", code, err)
		}
		if !ValidCloseCode(code) && (err == nil || err.Code != StatusProtocolError) {
			t.Fatalf("close %d: coder's answer: %v", code, err)
		}
	}
	for _, code := range []websocket.StatusCode{websocket.StatusNormalClosure, websocket.StatusGoingAway, 3000, 4999} {
		p, c := withCoderClient(t, 1<<20)
		go func() { _ = c.Close(code, strings.Repeat("r", 100)) }()
		_, _, err := p.next()
		if err == nil || err.Err != io.EOF || websocket.StatusCode(err.Code) != code || err.Reason != strings.Repeat("r", 100) {
			t.Fatalf("coder's close %d: %v", code, err)
		}
	}
	// An empty close payload is echoed as 1000; one byte is an error.
	p, c := withCoderClient(t, 1<<20)
	msgs := coderReads(c)
	p.write(true, OpClose, []byte{3})
	if m := recv(t, msgs); m.err == nil || websocket.CloseStatus(m.err) != -1 {
		t.Fatalf("a close frame of one byte: %v", m.err)
	}
	if code, _, err := ParseClose(nil); err != nil || code != StatusNormalClosure {
		t.Fatalf("ParseClose(empty) = %d, %v", code, err)
	}
}

// Autobahn 9: large messages (a 16 MiB one, and one in 1000 fragments)
// both ways; past the read limit, coder/websocket closes with 1009 and
// so does our reader.
func TestDiffLimits(t *testing.T) {
	const limit = 16 << 20
	p, c := withCoderClient(t, limit)
	c.SetReadLimit(limit)
	msgs := coderReads(c)
	big := make([]byte, limit)
	for i := range big {
		big[i] = byte(i * 7)
	}
	p.write(true, OpBinary, big)
	if m := recv(t, msgs); m.err != nil || !bytes.Equal(m.b, big) {
		t.Fatalf("16 MiB to coder: %d bytes, %v", len(m.b), m.err)
	}
	go func() { // our reader reads while it writes
		_ = c.Write(context.Background(), websocket.MessageBinary, big)
		w, _ := c.Writer(context.Background(), websocket.MessageBinary)
		for i := 0; i < 1000; i++ {
			_, _ = w.Write(big[i*1000 : (i+1)*1000])
		}
		_ = w.Close()
	}()
	if _, m, err := p.next(); err != nil || !bytes.Equal(m, big) {
		t.Fatalf("16 MiB from coder: %d bytes, %v", len(m), err)
	}
	if _, m, err := p.next(); err != nil || !bytes.Equal(m, big[:1e6]) {
		t.Fatalf("1000 fragments from coder: %d bytes, %v", len(m), err)
	}
	// Over the limit: coder/websocket refuses ours with 1009 ...
	p.write(true, OpBinary, append(big, 0))
	if m := recv(t, msgs); m.err == nil {
		t.Fatal("coder/websocket read a message over its limit")
	}
	if _, _, err := p.next(); err == nil || err.Code != StatusMessageTooBig {
		t.Fatalf("coder's close for a message over its limit: %v", err)
	}
	// ... and our reader refuses coder/websocket's, also in fragments.
	q, d := withCoderClient(t, 1000)
	go func() {
		w, _ := d.Writer(context.Background(), websocket.MessageText)
		_, _ = w.Write(make([]byte, 600))
		_, _ = w.Write(make([]byte, 600))
		_ = w.Close()
	}()
	if _, _, err := q.next(); err == nil || err.Code != StatusMessageTooBig || !errors.Is(err, ErrMessageTooBig) {
		t.Fatalf("our reader over its limit: %v", err)
	}
}
