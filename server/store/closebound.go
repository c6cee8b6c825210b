package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// closeBound bounds how long a connection pgx has given up on takes to
// close.
//
// When a call's context ends during a query (a partition, a commit that
// waits for a standby that is gone), pgx closes the connection in the
// background: it dials a cancel request and waits for the server to close
// that socket, then sends Terminate and reads what the server still sends
// until it closes the connection, each until 15 s have passed. The pool
// destroys such a connection only once that is done, and its slot stays
// taken meanwhile: with the link to the server blackholed, every
// connection of the pool ends up there, and the instance answers nothing
// (not even from another host of the DSN, once it is reachable) until
// they are all gone. On a healthy link both waits take a round trip.
//
// Every socket of a Store (the pool's, the LISTEN ones, which copy its
// ConnConfig, and the cancel requests, which pgx dials with the
// ConnConfig's DialFunc) is made by a dialer that wraps it: once the
// client has written a CancelRequest or a Terminate message on it (after
// either the client only waits for the server to close the socket), its
// deadline is at most closeBound away. Over TLS the messages are
// encrypted, are not recognised, and pgx's 15 s remain (a session's
// socket cannot be wrapped above TLS without hiding the *tls.Conn that
// SCRAM channel binding looks for).
const closeBound = time.Second

// cancelRequestCode is the protocol's CancelRequest code (1234 << 16 | 5678).
const cancelRequestCode = 80877102

// terminate is the frontend's Terminate message.
var terminate = []byte{'X', 0, 0, 0, 4}

// boundClose makes the sockets of cfg close within bound once given up
// (see closeBound).
func boundClose(cfg *pgconn.Config, bound time.Duration) {
	dial := cfg.DialFunc
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &closingConn{Conn: c, bound: bound}, nil
	}
}

// closingConn is a socket whose wait for its close is bounded once the
// client sent CancelRequest (its first message) or Terminate.
type closingConn struct {
	net.Conn
	bound time.Duration
	wrote atomic.Bool // something was written
	// endBy: when the client only waits for the close, the latest deadline
	// (Unix nanoseconds; 0 before).
	endBy atomic.Int64
}

func (c *closingConn) Write(b []byte) (int, error) {
	first := c.wrote.CompareAndSwap(false, true)
	if (first && isCancelRequest(b)) || bytes.Equal(b, terminate) {
		by := time.Now().Add(c.bound)
		c.endBy.CompareAndSwap(0, by.UnixNano())
		_ = c.Conn.SetDeadline(c.clamp(by))
	}
	return c.Conn.Write(b)
}

// SetDeadline keeps the bound once the connection is ending.
func (c *closingConn) SetDeadline(t time.Time) error {
	return c.Conn.SetDeadline(c.clamp(t))
}

func (c *closingConn) SetReadDeadline(t time.Time) error {
	return c.Conn.SetReadDeadline(c.clamp(t))
}

func (c *closingConn) SetWriteDeadline(t time.Time) error {
	return c.Conn.SetWriteDeadline(c.clamp(t))
}

func (c *closingConn) clamp(t time.Time) time.Time {
	by := c.endBy.Load()
	if by == 0 {
		return t
	}
	if limit := time.Unix(0, by); t.IsZero() || t.After(limit) {
		return limit
	}
	return t
}

// isCancelRequest: b is a whole CancelRequest message (length, code,
// backend pid, secret key), the first and only thing a cancel connection
// sends.
func isCancelRequest(b []byte) bool {
	return len(b) >= 16 && int(binary.BigEndian.Uint32(b[0:4])) == len(b) &&
		binary.BigEndian.Uint32(b[4:8]) == cancelRequestCode
}
