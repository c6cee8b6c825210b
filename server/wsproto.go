package server

// The server side of RFC 6455, just what /trpc needs: the opening
// handshake (no extension, no subprotocol), masked client frames with
// fragmentation and a read limit, ping/pong, the close handshake, and
// unmasked server frames that a connection's writer batches into one
// write. It exists so that an idle connection holds only a small read
// buffer and its read goroutine (the handshake's bufio buffers are
// dropped), and so that several queued messages leave in one syscall;
// clients (client/, loadgen, conformance) use github.com/coder/websocket.

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
)

// Frame opcodes.
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xA
)

// wsGUID is the key suffix of Sec-WebSocket-Accept.
const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// readBufSize is a connection's read buffer: frame headers and small
// messages are read through it; a longer payload is read straight into
// the message.
const readBufSize = 512

// acceptWS answers the opening handshake on w and hijacks the connection.
// pending is what the client sent after its request (already buffered by
// net/http). On failure an HTTP error has been written.
func acceptWS(w http.ResponseWriter, r *http.Request, writeTimeout time.Duration) (nc net.Conn, pending []byte, err error) {
	fail := func(status int, format string, args ...any) (net.Conn, []byte, error) {
		err := fmt.Errorf("websocket: "+format, args...)
		http.Error(w, err.Error(), status)
		return nil, nil, err
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		return fail(http.StatusMethodNotAllowed, "the handshake request method must be GET, not %s", r.Method)
	}
	if !r.ProtoAtLeast(1, 1) {
		return fail(http.StatusBadRequest, "the handshake needs HTTP/1.1 or later")
	}
	if v := r.Header.Get("Sec-WebSocket-Version"); v != "13" {
		w.Header().Set("Sec-WebSocket-Version", "13")
		return fail(http.StatusBadRequest, "unsupported Sec-WebSocket-Version %q: only 13", v)
	}
	key := strings.TrimSpace(r.Header.Get("Sec-WebSocket-Key"))
	if b, err := base64.StdEncoding.DecodeString(key); err != nil || len(b) != 16 {
		return fail(http.StatusBadRequest, "invalid Sec-WebSocket-Key %q", key)
	}
	nc, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return fail(http.StatusInternalServerError, "cannot hijack the connection: %v", err)
	}
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		pending = append([]byte(nil), b...)
	}
	sum := sha1.Sum([]byte(key + wsGUID))
	resp := make([]byte, 0, 160)
	resp = append(resp, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "...)
	resp = base64.StdEncoding.AppendEncode(resp, sum[:])
	resp = append(resp, "\r\n\r\n"...)
	_ = nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := nc.Write(resp); err != nil {
		_ = nc.Close()
		return nil, nil, fmt.Errorf("websocket: writing the handshake: %w", err)
	}
	return nc, pending, nil
}

// closeErr is how a connection's read side ends: the close status to
// send (0: none, the peer is gone or has closed) and its reason.
type closeErr struct {
	code   websocket.StatusCode
	reason string
	err    error // the I/O error, if any
}

func (e *closeErr) Error() string {
	if e.err != nil {
		return fmt.Sprintf("websocket: %v", e.err)
	}
	return fmt.Sprintf("websocket: close %d %s", e.code, e.reason)
}

// frameReader reads a client's frames. It is used by the read goroutine
// only.
type frameReader struct {
	nc    net.Conn
	pre   []byte // bytes read before the upgrade, read first
	limit int64
	buf   [readBufSize]byte
	r, w  int // unread bytes: buf[r:w]
	// control is called with each ping, pong and close frame's payload
	// (the payload is valid until it returns).
	control func(op byte, payload []byte)
	// discard: skip data frames without a limit (the close handshake is
	// under way).
	discard bool
	skipN   int64 // payload bytes of a refused frame, skipped first
}

// fill reads more bytes into buf, moving the unread ones to the front.
func (fr *frameReader) fill() error {
	if fr.r > 0 {
		fr.w = copy(fr.buf[:], fr.buf[fr.r:fr.w])
		fr.r = 0
	}
	n, err := fr.Read(fr.buf[fr.w:])
	fr.w += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// need makes n bytes (n <= len(buf)) available in buf[r:].
func (fr *frameReader) need(n int) error {
	for fr.w-fr.r < n {
		if err := fr.fill(); err != nil {
			return err
		}
	}
	return nil
}

// readFull fills p from buf, then from the connection.
func (fr *frameReader) readFull(p []byte) error {
	n := copy(p, fr.buf[fr.r:fr.w])
	fr.r += n
	if n == len(p) {
		return nil
	}
	_, err := io.ReadFull(fr, p[n:])
	return err
}

// Read reads what came before the upgrade, then the connection.
func (fr *frameReader) Read(p []byte) (int, error) {
	if len(fr.pre) > 0 {
		n := copy(p, fr.pre)
		if fr.pre = fr.pre[n:]; len(fr.pre) == 0 {
			fr.pre = nil
		}
		return n, nil
	}
	return fr.nc.Read(p)
}

// skip discards n payload bytes.
func (fr *frameReader) skip(n int64) error {
	k := min(n, int64(fr.w-fr.r))
	fr.r += int(k)
	n -= k
	if n == 0 {
		return nil
	}
	_, err := io.CopyN(io.Discard, fr, n)
	return err
}

type frameHeader struct {
	fin    bool
	op     byte
	length int64
	mask   [4]byte
}

func (fr *frameReader) header() (frameHeader, *closeErr) {
	var h frameHeader
	if err := fr.need(2); err != nil {
		return h, &closeErr{err: err}
	}
	b0, b1 := fr.buf[fr.r], fr.buf[fr.r+1]
	h.fin, h.op = b0&0x80 != 0, b0&0x0f
	n := 2
	switch l := b1 & 0x7f; l {
	case 126:
		n += 2
	case 127:
		n += 8
	}
	if b1&0x80 != 0 {
		n += 4
	}
	if err := fr.need(n); err != nil {
		return h, &closeErr{err: err}
	}
	p := fr.buf[fr.r:]
	switch l := b1 & 0x7f; l {
	case 126:
		h.length = int64(binary.BigEndian.Uint16(p[2:]))
		p = p[4:]
	case 127:
		u := binary.BigEndian.Uint64(p[2:])
		if u>>63 != 0 {
			return h, &closeErr{code: websocket.StatusProtocolError, reason: "a frame length with its high bit set"}
		}
		h.length = int64(u)
		p = p[10:]
	default:
		h.length = int64(l)
		p = p[2:]
	}
	fr.r += n
	switch {
	case b0&0x70 != 0:
		return h, &closeErr{code: websocket.StatusProtocolError, reason: "reserved bits set without an extension"}
	case b1&0x80 == 0:
		return h, &closeErr{code: websocket.StatusProtocolError, reason: "a client frame must be masked"}
	case h.op >= 8 && (!h.fin || h.length > 125):
		return h, &closeErr{code: websocket.StatusProtocolError, reason: "a control frame must be final and at most 125 bytes"}
	}
	copy(h.mask[:], p[:4])
	switch h.op {
	case opContinuation, opText, opBinary, opClose, opPing, opPong:
	default:
		return h, &closeErr{code: websocket.StatusProtocolError, reason: fmt.Sprintf("unknown opcode %d", h.op)}
	}
	return h, nil
}

// next returns the next data message (opText or opBinary), handling the
// control frames in between.
func (fr *frameReader) next() (byte, []byte, *closeErr) {
	var (
		op    byte
		msg   []byte
		inMsg bool
	)
	if fr.skipN > 0 {
		n := fr.skipN
		fr.skipN = 0
		if err := fr.skip(n); err != nil {
			return 0, nil, &closeErr{err: err}
		}
	}
	for {
		h, cerr := fr.header()
		if cerr != nil {
			return 0, nil, cerr
		}
		if h.op >= 8 {
			var ctl [125]byte
			p := ctl[:h.length]
			if err := fr.readFull(p); err != nil {
				return 0, nil, &closeErr{err: err}
			}
			mask(h.mask, 0, p)
			if h.op == opClose {
				return 0, nil, closeFrame(p)
			}
			fr.control(h.op, p)
			continue
		}
		if fr.discard {
			if err := fr.skip(h.length); err != nil {
				return 0, nil, &closeErr{err: err}
			}
			continue
		}
		switch {
		case h.op == opContinuation && !inMsg:
			return 0, nil, &closeErr{code: websocket.StatusProtocolError, reason: "a continuation frame outside a message"}
		case h.op != opContinuation && inMsg:
			return 0, nil, &closeErr{code: websocket.StatusProtocolError, reason: "a new message inside a fragmented one"}
		case h.op != opContinuation:
			op, inMsg = h.op, true
		}
		if int64(len(msg))+h.length > fr.limit {
			fr.skipN = h.length // if reading goes on (the close handshake)
			return 0, nil, &closeErr{code: websocket.StatusMessageTooBig,
				reason: fmt.Sprintf("message larger than %d bytes", fr.limit), err: errMessageTooBig}
		}
		if h.length > 0 {
			start := len(msg)
			msg = slices.Grow(msg, int(h.length))[:start+int(h.length)]
			if err := fr.readFull(msg[start:]); err != nil {
				return 0, nil, &closeErr{err: err}
			}
			mask(h.mask, 0, msg[start:])
		}
		if h.fin {
			if msg == nil {
				msg = []byte{}
			}
			return op, msg, nil
		}
	}
}

var errMessageTooBig = errors.New("message too big")

// closeFrame reads a peer's close frame: the status to echo.
func closeFrame(p []byte) *closeErr {
	switch {
	case len(p) == 0:
		return &closeErr{code: websocket.StatusNormalClosure, err: io.EOF}
	case len(p) == 1:
		return &closeErr{code: websocket.StatusProtocolError, reason: "a close frame of one byte"}
	}
	code := websocket.StatusCode(binary.BigEndian.Uint16(p))
	if !validCloseCode(code) {
		return &closeErr{code: websocket.StatusProtocolError, reason: fmt.Sprintf("invalid close code %d", code)}
	}
	if !utf8.Valid(p[2:]) {
		return &closeErr{code: websocket.StatusInvalidFramePayloadData, reason: "a close reason that is not UTF-8"}
	}
	return &closeErr{code: code, err: io.EOF}
}

func validCloseCode(c websocket.StatusCode) bool {
	switch {
	case c >= 1000 && c <= 1003, c >= 1007 && c <= 1014, c >= 3000 && c <= 4999:
		return true
	}
	return false
}

// mask XORs b with the key starting at key position pos (RFC 6455
// 5.3), eight bytes at a time.
func mask(key [4]byte, pos int, b []byte) {
	var k [8]byte
	for i := range k {
		k[i] = key[(pos+i)&3]
	}
	k8 := binary.LittleEndian.Uint64(k[:])
	for len(b) >= 8 {
		binary.LittleEndian.PutUint64(b, binary.LittleEndian.Uint64(b)^k8)
		b = b[8:]
	}
	for i := range b {
		b[i] ^= k[i]
	}
}

// appendFrame appends one unmasked, unfragmented server frame whose
// payload is a followed by b.
func appendFrame(buf []byte, op byte, a, b []byte) []byte {
	n := len(a) + len(b)
	switch {
	case n <= 125:
		buf = append(buf, 0x80|op, byte(n))
	case n <= 0xffff:
		buf = append(buf, 0x80|op, 126, byte(n>>8), byte(n))
	default:
		buf = append(buf, 0x80|op, 127)
		buf = binary.BigEndian.AppendUint64(buf, uint64(n))
	}
	return append(append(buf, a...), b...)
}

// closePayload is a close frame's payload: the status and a reason cut
// to fit in a control frame.
func closePayload(code websocket.StatusCode, reason string) []byte {
	if code == 0 {
		return nil
	}
	if len(reason) > 123 {
		reason = reason[:123]
		for !utf8.ValidString(reason) {
			reason = reason[:len(reason)-1]
		}
	}
	b := binary.BigEndian.AppendUint16(make([]byte, 0, 2+len(reason)), uint16(code))
	return append(b, reason...)
}
