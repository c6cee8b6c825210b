package wsframe

import (
	"encoding/binary"
	"strconv"
	"unicode/utf8"
)

// Opcodes (RFC 6455 5.2).
const (
	OpContinuation = 0x0
	OpText         = 0x1
	OpBinary       = 0x2
	OpClose        = 0x8
	OpPing         = 0x9
	OpPong         = 0xA
)

// MaxControl is the longest payload of a control frame.
const MaxControl = 125

// Close status codes kbkit sends or checks (RFC 6455 7.4.1).
const (
	StatusNormalClosure           = 1000
	StatusGoingAway               = 1001
	StatusProtocolError           = 1002
	StatusUnsupportedData         = 1003
	StatusInvalidFramePayloadData = 1007
	StatusPolicyViolation         = 1008
	StatusMessageTooBig           = 1009
	StatusInternalError           = 1011
)

// Header is a frame header.
type Header struct {
	Fin    bool
	RSV    byte // the reserved bits RSV1-3, as in the first byte (0x70)
	Op     byte
	Masked bool
	Mask   [4]byte
	Length uint64
}

// HeaderLen is the length of the header whose first two bytes are b0, b1.
func HeaderLen(b0, b1 byte) int {
	n := 2
	switch b1 & 0x7f {
	case 126:
		n += 2
	case 127:
		n += 8
	}
	if b1&0x80 != 0 {
		n += 4
	}
	return n
}

// ParseHeader reads the header at the start of p, which holds at least
// HeaderLen(p[0], p[1]) bytes; n is its length, 0 if p is too short.
func ParseHeader(p []byte) (h Header, n int) {
	if len(p) < 2 {
		return h, 0
	}
	b0, b1 := p[0], p[1]
	n = HeaderLen(b0, b1)
	if len(p) < n {
		return h, 0
	}
	h.Fin, h.RSV, h.Op, h.Masked = b0&0x80 != 0, b0&0x70, b0&0x0f, b1&0x80 != 0
	q := p[2:]
	switch l := b1 & 0x7f; l {
	case 126:
		h.Length = uint64(binary.BigEndian.Uint16(q))
		q = q[2:]
	case 127:
		h.Length = binary.BigEndian.Uint64(q)
		q = q[8:]
	default:
		h.Length = uint64(l)
	}
	if h.Masked {
		copy(h.Mask[:], q)
	}
	return h, n
}

// AppendHeader appends h in its shortest form.
func AppendHeader(b []byte, h Header) []byte {
	b0 := h.Op&0x0f | h.RSV&0x70
	if h.Fin {
		b0 |= 0x80
	}
	var m byte
	if h.Masked {
		m = 0x80
	}
	switch n := h.Length; {
	case n <= 125:
		b = append(b, b0, m|byte(n))
	case n <= 0xffff:
		b = append(b, b0, m|126, byte(n>>8), byte(n))
	default:
		b = append(b, b0, m|127)
		b = binary.BigEndian.AppendUint64(b, n)
	}
	if h.Masked {
		b = append(b, h.Mask[:]...)
	}
	return b
}

// AppendFrame appends one final, unmasked frame (a server's) whose
// payload is a followed by b.
func AppendFrame(buf []byte, op byte, a, b []byte) []byte {
	switch n := len(a) + len(b); {
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

// AppendMasked appends one frame masked with key (a client's, RFC 6455
// 5.3).
func AppendMasked(buf []byte, fin bool, op byte, key [4]byte, p []byte) []byte {
	buf = AppendHeader(buf, Header{Fin: fin, Op: op, Masked: true, Mask: key, Length: uint64(len(p))})
	start := len(buf)
	buf = append(buf, p...)
	Mask(key, 0, buf[start:])
	return buf
}

// Mask XORs b with the key starting at key position pos (RFC 6455 5.3),
// eight bytes at a time; it returns the key position after b.
func Mask(key [4]byte, pos int, b []byte) int {
	var k [8]byte
	for i := range k {
		k[i] = key[(pos+i)&3]
	}
	k8 := binary.LittleEndian.Uint64(k[:])
	n := len(b)
	for len(b) >= 8 {
		binary.LittleEndian.PutUint64(b, binary.LittleEndian.Uint64(b)^k8)
		b = b[8:]
	}
	for i := range b {
		b[i] ^= k[i]
	}
	return (pos + n) & 3
}

// Error is a violation of the protocol by the peer (Code: the close
// status to send, Reason: why), the peer's close frame (Err is io.EOF,
// Code its status), or a failed read (Err, Code 0).
type Error struct {
	Code   uint16
	Reason string
	Err    error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return "websocket: " + e.Err.Error()
	}
	return "websocket: close " + strconv.Itoa(int(e.Code)) + " " + e.Reason
}

func (e *Error) Unwrap() error { return e.Err }

func protocolError(reason string) *Error { return &Error{Code: StatusProtocolError, Reason: reason} }

// Check applies the header rules to a frame received: no reserved bit
// (no extension is negotiated), a length below 2^63, frames masked when
// mustMask (a server reading a client), control frames final and at most
// MaxControl bytes, known opcodes.
func Check(h Header, mustMask bool) *Error {
	switch {
	case h.Length>>63 != 0:
		return protocolError("a frame length with its high bit set")
	case h.RSV != 0:
		return protocolError("reserved bits set without an extension")
	case mustMask && !h.Masked:
		return protocolError("a client frame must be masked")
	case h.Op >= 8 && (!h.Fin || h.Length > MaxControl):
		return protocolError("a control frame must be final and at most 125 bytes")
	}
	switch h.Op {
	case OpContinuation, OpText, OpBinary, OpClose, OpPing, OpPong:
		return nil
	}
	return protocolError("unknown opcode " + strconv.Itoa(int(h.Op)))
}

// Sequence applies the fragmentation rules to a data frame: a
// continuation only inside a message, a new message only outside one.
func Sequence(inMessage bool, op byte) *Error {
	switch {
	case op == OpContinuation && !inMessage:
		return protocolError("a continuation frame outside a message")
	case op != OpContinuation && inMessage:
		return protocolError("a new message inside a fragmented one")
	}
	return nil
}

// ValidCloseCode reports whether a close frame may carry code.
func ValidCloseCode(c uint16) bool {
	switch {
	case c >= 1000 && c <= 1003, c >= 1007 && c <= 1014, c >= 3000 && c <= 4999:
		return true
	}
	return false
}

// ParseClose reads a peer's close frame payload: the status to echo
// (1000 for an empty payload) and the reason, or the violation.
func ParseClose(p []byte) (code uint16, reason []byte, err *Error) {
	switch {
	case len(p) == 0:
		return StatusNormalClosure, nil, nil
	case len(p) == 1:
		return 0, nil, protocolError("a close frame of one byte")
	}
	code = binary.BigEndian.Uint16(p)
	if !ValidCloseCode(code) {
		return 0, nil, protocolError("invalid close code " + strconv.Itoa(int(code)))
	}
	if !utf8.Valid(p[2:]) {
		return 0, nil, &Error{Code: StatusInvalidFramePayloadData, Reason: "a close reason that is not UTF-8"}
	}
	return code, p[2:], nil
}

// ClosePayload is a close frame's payload: the status and a reason cut,
// at a character boundary, to fit in a control frame. Code 0: none.
func ClosePayload(code uint16, reason string) []byte {
	if code == 0 {
		return nil
	}
	if len(reason) > MaxControl-2 {
		reason = reason[:MaxControl-2]
		for !utf8.ValidString(reason) {
			reason = reason[:len(reason)-1]
		}
	}
	b := binary.BigEndian.AppendUint16(make([]byte, 0, 2+len(reason)), code)
	return append(b, reason...)
}
