package client

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
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

	"github.com/subspace/kbkit/internal/wsframe"
)

// A subscription's WebSocket. Over plain http the client speaks RFC 6455
// itself (rawWS, through the module's frame codec, internal/wsframe, which
// the server uses too): a subscription receives one small text message per
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

// rawWS is a client WebSocket over one TCP connection; its frames go
// through the module's one codec (internal/wsframe).
type rawWS struct {
	nc        net.Conn
	fr        wsframe.Reader // the read side, read by one goroutine
	wmu       sync.Mutex     // writes: messages, pongs, the close frame
	closeOnce sync.Once
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
	var pre []byte
	if n := br.Buffered(); n > 0 { // frames sent right after the handshake
		b, _ := br.Peek(n)
		pre = append([]byte(nil), b...)
	}
	return newRawWS(nc, pre, readLimit), nil
}

// newRawWS is the WebSocket on nc once the handshake is done; pre is what
// the server sent after its response, already read.
func newRawWS(nc net.Conn, pre []byte, readLimit int) *rawWS {
	w := &rawWS{nc: nc}
	w.fr = wsframe.Reader{Src: nc, Pre: pre, Limit: int64(readLimit), BufSize: 4096, Control: w.control}
	return w
}

func (w *rawWS) read(buf []byte) ([]byte, error) {
	_, m, err := w.fr.Next(buf)
	switch {
	case err == nil:
		return m, nil
	case errors.Is(err.Err, io.EOF) && err.Code != 0: // the server's close frame: answered
		w.closeOnce.Do(func() {
			w.wmu.Lock()
			_ = w.writeFrame(wsframe.OpClose, wsframe.ClosePayload(err.Code, ""))
			w.wmu.Unlock()
			w.nc.Close()
		})
		return nil, fmt.Errorf("%w: status %d %s", errWSClosed, err.Code, err.Reason)
	case err.Code != 0:
		return nil, w.fail(err.Code, err.Reason)
	}
	return nil, err.Err
}

// control answers a ping (the reader's goroutine).
func (w *rawWS) control(op byte, p []byte) {
	if op == wsframe.OpPing {
		_ = w.frame(wsframe.OpPong, p)
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
		return w.writeFrame(wsframe.OpText, b)
	}
	return w.frame(wsframe.OpText, b)
}

func (w *rawWS) frame(op byte, p []byte) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	return w.writeFrame(op, p)
}

// writeFrame writes one final, masked frame (clients mask, RFC 6455
// 5.3); w.wmu is held.
func (w *rawWS) writeFrame(op byte, p []byte) error {
	var key [4]byte
	_, _ = rand.Read(key[:])
	_, err := w.nc.Write(wsframe.AppendMasked(make([]byte, 0, 14+len(p)), true, op, key, p))
	return err
}

func (w *rawWS) close(reason string) { w.closeWith(1000, reason) }

// closeWith sends a close frame (best effort, briefly) and closes the
// connection, which ends a read in progress.
func (w *rawWS) closeWith(code uint16, reason string) {
	w.closeOnce.Do(func() {
		w.wmu.Lock()
		_ = w.nc.SetWriteDeadline(time.Now().Add(time.Second))
		_ = w.writeFrame(wsframe.OpClose, wsframe.ClosePayload(code, reason))
		w.wmu.Unlock()
		w.nc.Close()
	})
}
