package wsframe

import (
	"errors"
	"io"
	"slices"
	"strconv"
)

// ReadBufSize is a Reader's buffer unless BufSize says otherwise: frame
// headers and small messages are read through it; a longer payload is
// read straight into the message.
const ReadBufSize = 512

// ErrMessageTooBig is the Err of the Error a message over the limit ends
// the read with.
var ErrMessageTooBig = errors.New("message too big")

// Reader reads messages from a connection's frames. It is used by one
// goroutine.
type Reader struct {
	Src io.Reader // the connection
	Pre []byte    // bytes read before (after a handshake), read first
	// Limit is the longest message; a longer one ends the read with
	// StatusMessageTooBig.
	Limit int64
	// MustMask: the peer is a client, whose frames must be masked.
	MustMask bool
	// Control is called with each ping and pong frame's payload (valid
	// until it returns).
	Control func(op byte, payload []byte)
	// Discard: skip data frames without a limit (the close handshake is
	// under way).
	Discard bool
	// BufSize is the buffer's size (at least 14, the longest header);
	// 0: ReadBufSize.
	BufSize int

	buf   []byte // allocated at the first read
	r, w  int    // unread bytes: buf[r:w]
	skipN int64  // payload bytes of a refused frame, skipped first
}

// Read reads what came before, then the connection.
func (fr *Reader) Read(p []byte) (int, error) {
	if len(fr.Pre) > 0 {
		n := copy(p, fr.Pre)
		if fr.Pre = fr.Pre[n:]; len(fr.Pre) == 0 {
			fr.Pre = nil
		}
		return n, nil
	}
	return fr.Src.Read(p)
}

// fill reads more bytes into buf, moving the unread ones to the front.
func (fr *Reader) fill() error {
	if fr.buf == nil {
		size := fr.BufSize
		if size == 0 {
			size = ReadBufSize
		}
		fr.buf = make([]byte, max(size, 14))
	}
	if fr.r > 0 {
		fr.w = copy(fr.buf, fr.buf[fr.r:fr.w])
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
func (fr *Reader) need(n int) error {
	for fr.w-fr.r < n {
		if err := fr.fill(); err != nil {
			return err
		}
	}
	return nil
}

// readFull fills p from buf, then from the connection.
func (fr *Reader) readFull(p []byte) error {
	n := copy(p, fr.buf[fr.r:fr.w])
	fr.r += n
	if n == len(p) {
		return nil
	}
	_, err := io.ReadFull(fr, p[n:])
	return err
}

// skip discards n payload bytes.
func (fr *Reader) skip(n int64) error {
	k := min(n, int64(fr.w-fr.r))
	fr.r += int(k)
	n -= k
	if n == 0 {
		return nil
	}
	_, err := io.CopyN(io.Discard, fr, n)
	return err
}

// header reads and checks the next frame header.
func (fr *Reader) header() (Header, *Error) {
	if err := fr.need(2); err != nil {
		return Header{}, &Error{Err: err}
	}
	if err := fr.need(HeaderLen(fr.buf[fr.r], fr.buf[fr.r+1])); err != nil {
		return Header{}, &Error{Err: err}
	}
	h, n := ParseHeader(fr.buf[fr.r:fr.w])
	fr.r += n
	return h, Check(h, fr.MustMask)
}

// Next returns the next data message (OpText or OpBinary), appended to
// dst[:0], handling the control frames in between: pings and pongs go to
// Control, a close frame ends the read (an Error with Err io.EOF and the
// status to echo, or the violation in it).
func (fr *Reader) Next(dst []byte) (byte, []byte, *Error) {
	var (
		op    byte
		msg   = dst[:0]
		inMsg bool
	)
	if fr.skipN > 0 {
		n := fr.skipN
		fr.skipN = 0
		if err := fr.skip(n); err != nil {
			return 0, nil, &Error{Err: err}
		}
	}
	for {
		h, cerr := fr.header()
		if cerr != nil {
			return 0, nil, cerr
		}
		if h.Op >= 8 {
			var ctl [MaxControl]byte
			p := ctl[:h.Length]
			if err := fr.readFull(p); err != nil {
				return 0, nil, &Error{Err: err}
			}
			if h.Masked {
				Mask(h.Mask, 0, p)
			}
			if h.Op == OpClose {
				code, reason, cerr := ParseClose(p)
				if cerr != nil {
					return 0, nil, cerr
				}
				return 0, nil, &Error{Code: code, Reason: string(reason), Err: io.EOF}
			}
			if fr.Control != nil {
				fr.Control(h.Op, p)
			}
			continue
		}
		length := int64(h.Length)
		if fr.Discard {
			if err := fr.skip(length); err != nil {
				return 0, nil, &Error{Err: err}
			}
			continue
		}
		if cerr := Sequence(inMsg, h.Op); cerr != nil {
			return 0, nil, cerr
		}
		if h.Op != OpContinuation {
			op, inMsg = h.Op, true
		}
		if int64(len(msg))+length > fr.Limit {
			fr.skipN = length // if reading goes on (the close handshake)
			return 0, nil, &Error{Code: StatusMessageTooBig,
				Reason: "message larger than " + strconv.FormatInt(fr.Limit, 10) + " bytes", Err: ErrMessageTooBig}
		}
		if length > 0 {
			start := len(msg)
			msg = slices.Grow(msg, int(length))[:start+int(length)]
			if err := fr.readFull(msg[start:]); err != nil {
				return 0, nil, &Error{Err: err}
			}
			if h.Masked {
				Mask(h.Mask, 0, msg[start:])
			}
		}
		if h.Fin {
			if msg == nil {
				msg = []byte{}
			}
			return op, msg, nil
		}
	}
}
