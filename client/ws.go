package client

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// A subscription's WebSocket. Over plain http the client speaks RFC 6455
// itself (rawWS): a subscription receives one small text message per
// event, and a general-purpose library's per-message work (its read
// lock, message reader, limit reader, context checks) cost as much CPU
// as the read itself was over the floor; here a message is one header
// parse over a buffered read. Over https, or where the base has a path,
// coder/websocket (libWS) does it.
type wsTransport interface {
	// read returns the next text or binary message (in buf's storage
	// when it fits; valid until the next read), answering pings.
	read(buf []byte) ([]byte, error)
	write(ctx context.Context, b []byte) error
	// close ends the connection, with a normal closure when it can.
	close(reason string)
}

// libWS is a coder/websocket connection.
type libWS struct{ c *websocket.Conn }

func (l libWS) read(buf []byte) ([]byte, error) {
	_, r, err := l.c.Reader(context.Background())
	if err != nil {
		return nil, err
	}
	b := buf[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func (l libWS) write(ctx context.Context, b []byte) error {
	return l.c.Write(ctx, websocket.MessageText, b)
}

func (l libWS) close(reason string) { _ = l.c.Close(websocket.StatusNormalClosure, reason) }

// dialWS opens the WebSocket of base's /trpc endpoint.
func dialWS(ctx context.Context, base string, h http.Header, readLimit int) (wsTransport, error) {
	u, err := url.Parse(base)
	if err == nil && u.Scheme == "http" && (u.Path == "" || u.Path == "/") && u.User == nil && u.Host != "" {
		return dialRawWS(ctx, u, h, readLimit)
	}
	conn, _, err := websocket.Dial(ctx, strings.Replace(base, "http", "ws", 1)+"/trpc", &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(int64(readLimit))
	return libWS{conn}, nil
}

// rawWS is a client WebSocket over one TCP connection.
type rawWS struct {
	nc        net.Conn
	br        *bufio.Reader
	readLimit int
	wmu       sync.Mutex // writes: messages, pongs, the close frame
	closeOnce sync.Once
	// hdr and ctl are the reader's scratch space (a frame header, a
	// control frame's payload): kept here so that they do not escape per
	// read.
	hdr [8]byte
	ctl [125]byte
}

const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// errWSClosed is a read after the server closed the WebSocket.
var errWSClosed = errors.New("client: websocket closed by the server")

func dialRawWS(ctx context.Context, u *url.URL, h http.Header, readLimit int) (*rawWS, error) {
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "80")
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	fail := func(err error) (*rawWS, error) {
		nc.Close()
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	var key [16]byte
	_, _ = rand.Read(key[:])
	k := base64.StdEncoding.EncodeToString(key[:])
	var req strings.Builder
	req.WriteString("GET /trpc HTTP/1.1\r\nHost: " + u.Host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + k + "\r\nSec-WebSocket-Version: 13\r\nUser-Agent: kbkit\r\n")
	for name, vs := range h {
		for _, v := range vs {
			req.WriteString(name + ": " + v + "\r\n")
		}
	}
	req.WriteString("\r\n")
	if _, err := io.WriteString(nc, req.String()); err != nil {
		return fail(err)
	}
	br := bufio.NewReaderSize(nc, 4096)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
	if err != nil {
		return fail(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fail(fmt.Errorf("failed to WebSocket dial: expected handshake response status code 101 but got %d: %s", resp.StatusCode, body))
	}
	sum := sha1.Sum([]byte(k + wsGUID))
	if !strings.EqualFold(resp.Header.Get("Upgrade"), "websocket") ||
		resp.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) ||
		resp.Header.Get("Sec-WebSocket-Extensions") != "" {
		return fail(errors.New("failed to WebSocket dial: invalid handshake response"))
	}
	if !stop() {
		return fail(ctx.Err())
	}
	_ = nc.SetDeadline(time.Time{})
	return &rawWS{nc: nc, br: br, readLimit: readLimit}, nil
}

// Opcodes.
const (
	opContinuation = 0
	opText         = 1
	opBinary       = 2
	opClose        = 8
	opPing         = 9
	opPong         = 10
)

func (w *rawWS) read(buf []byte) ([]byte, error) {
	b := buf[:0]
	inMessage := false
	for {
		hdr := w.hdr[:2]
		if _, err := io.ReadFull(w.br, hdr); err != nil {
			return nil, err
		}
		fin, op, masked := hdr[0]&0x80 != 0, hdr[0]&0x0f, hdr[1]&0x80 != 0
		if hdr[0]&0x70 != 0 {
			return nil, w.fail(1002, "reserved bits set")
		}
		n := uint64(hdr[1] & 0x7f)
		switch n {
		case 126:
			ext := w.hdr[:2]
			if _, err := io.ReadFull(w.br, ext); err != nil {
				return nil, err
			}
			n = uint64(binary.BigEndian.Uint16(ext))
		case 127:
			ext := w.hdr[:8]
			if _, err := io.ReadFull(w.br, ext); err != nil {
				return nil, err
			}
			n = binary.BigEndian.Uint64(ext)
		}
		var mask [4]byte
		if masked { // servers do not mask; accept it anyway
			if _, err := io.ReadFull(w.br, w.hdr[:4]); err != nil {
				return nil, err
			}
			copy(mask[:], w.hdr[:4])
		}
		if op >= opClose { // control frames: at most 125 bytes, not fragmented
			if n > 125 || !fin {
				return nil, w.fail(1002, "invalid control frame")
			}
			p := w.ctl[:]
			if _, err := io.ReadFull(w.br, p[:n]); err != nil {
				return nil, err
			}
			if masked {
				unmask(p[:n], mask)
			}
			switch op {
			case opPing:
				_ = w.frame(opPong, p[:n])
			case opClose:
				w.closeOnce.Do(func() {
					w.wmu.Lock()
					_ = w.writeFrame(opClose, p[:min(n, 2)])
					w.wmu.Unlock()
					w.nc.Close()
				})
				if n >= 2 {
					return nil, fmt.Errorf("%w: status %d %s", errWSClosed, binary.BigEndian.Uint16(p[:2]), p[2:n])
				}
				return nil, errWSClosed
			case opPong:
			default:
				return nil, w.fail(1002, "unknown control opcode")
			}
			continue
		}
		switch {
		case op == opContinuation && !inMessage, (op == opText || op == opBinary) && inMessage, op > opBinary:
			return nil, w.fail(1002, "unexpected data frame")
		}
		inMessage = true
		if uint64(len(b))+n > uint64(w.readLimit) {
			return nil, w.fail(1009, "message too big")
		}
		start := len(b)
		if need := start + int(n); need > cap(b) {
			nb := make([]byte, start, need)
			copy(nb, b)
			b = nb
		}
		b = b[:start+int(n)]
		if _, err := io.ReadFull(w.br, b[start:]); err != nil {
			return nil, err
		}
		if masked {
			unmask(b[start:], mask)
		}
		if fin {
			return b, nil
		}
	}
}

func unmask(p []byte, key [4]byte) {
	for i := range p {
		p[i] ^= key[i&3]
	}
}

// fail closes the connection with a protocol error.
func (w *rawWS) fail(code uint16, reason string) error {
	w.closeWith(code, reason)
	return fmt.Errorf("client: websocket: %s", reason)
}

func (w *rawWS) write(ctx context.Context, b []byte) error {
	if dl, ok := ctx.Deadline(); ok {
		w.wmu.Lock()
		defer w.wmu.Unlock()
		_ = w.nc.SetWriteDeadline(dl)
		defer w.nc.SetWriteDeadline(time.Time{})
		return w.writeFrame(opText, b)
	}
	return w.frame(opText, b)
}

func (w *rawWS) frame(op byte, p []byte) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	return w.writeFrame(op, p)
}

// writeFrame writes one final, masked frame (clients mask, RFC 6455
// 5.3); w.wmu is held.
func (w *rawWS) writeFrame(op byte, p []byte) error {
	f := make([]byte, 0, 14+len(p))
	f = append(f, 0x80|op)
	switch n := len(p); {
	case n < 126:
		f = append(f, 0x80|byte(n))
	case n <= 0xffff:
		f = append(f, 0x80|126)
		f = binary.BigEndian.AppendUint16(f, uint16(n))
	default:
		f = append(f, 0x80|127)
		f = binary.BigEndian.AppendUint64(f, uint64(n))
	}
	var key [4]byte
	_, _ = rand.Read(key[:])
	f = append(f, key[:]...)
	start := len(f)
	f = append(f, p...)
	unmask(f[start:], key)
	_, err := w.nc.Write(f)
	return err
}

func (w *rawWS) close(reason string) { w.closeWith(1000, reason) }

// closeWith sends a close frame (best effort, briefly) and closes the
// connection, which ends a read in progress.
func (w *rawWS) closeWith(code uint16, reason string) {
	w.closeOnce.Do(func() {
		if len(reason) > 123 {
			reason = reason[:123]
		}
		p := binary.BigEndian.AppendUint16(nil, code)
		p = append(p, reason...)
		w.wmu.Lock()
		_ = w.nc.SetWriteDeadline(time.Now().Add(time.Second))
		_ = w.writeFrame(opClose, p)
		w.wmu.Unlock()
		w.nc.Close()
	})
}
