package server

// The server side of RFC 6455, just what /trpc needs: the opening
// handshake (no extension, no subprotocol) here, and the frames through
// the module's one codec (internal/wsframe): masked client frames with
// fragmentation and a read limit, ping/pong, the close handshake, and
// unmasked server frames that a connection's writer batches into one
// write. It exists so that an idle connection holds only a small read
// buffer and its read goroutine (the handshake's bufio buffers are
// dropped), and so that several queued messages leave in one syscall.
// The client (client/ws.go) speaks the same codec over plain http, and
// github.com/coder/websocket over https.

import (
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/subspace/kbkit/internal/wsframe"
)

// wsGUID is the key suffix of Sec-WebSocket-Accept.
const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

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

// frameReader reads a client's frames (wsframe.Reader, MustMask). It is
// used by the read goroutine only.
type frameReader struct{ wsframe.Reader }

// next returns the next data message (text or binary), handling the
// control frames in between.
func (fr *frameReader) next() (byte, []byte, *closeErr) {
	op, msg, err := fr.Next(nil)
	if err != nil {
		return 0, nil, &closeErr{code: websocket.StatusCode(err.Code), reason: err.Reason, err: err.Err}
	}
	return op, msg, nil
}

// closePayload is a close frame's payload: the status and a reason cut
// to fit in a control frame.
func closePayload(code websocket.StatusCode, reason string) []byte {
	return wsframe.ClosePayload(uint16(code), reason)
}
