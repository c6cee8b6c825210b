package wsframe

import (
	"bytes"
	"testing"

	"pgregory.net/rapid"
)

// Headers round-trip at the boundary payload lengths, in their shortest
// form (2, 4 or 10 bytes, and 4 more with a mask).
func TestHeaderBoundaries(t *testing.T) {
	for _, c := range []struct {
		length uint64
		size   int
	}{{0, 2}, {125, 2}, {126, 4}, {127, 4}, {65535, 4}, {65536, 10}, {1 << 32, 10}, {1<<63 - 1, 10}} {
		for _, masked := range []bool{false, true} {
			h := Header{Fin: true, Op: OpBinary, Masked: masked, Mask: [4]byte{9, 8, 7, 6}, Length: c.length}
			if !masked {
				h.Mask = [4]byte{}
			}
			b := AppendHeader(nil, h)
			want := c.size
			if masked {
				want += 4
			}
			if len(b) != want || HeaderLen(b[0], b[1]) != want {
				t.Fatalf("length %d masked %v: %d bytes (HeaderLen %d), want %d", c.length, masked, len(b), HeaderLen(b[0], b[1]), want)
			}
			got, n := ParseHeader(b)
			if n != len(b) || got != h {
				t.Fatalf("length %d: parsed %+v (%d bytes), wrote %+v", c.length, got, n, h)
			}
			if _, n := ParseHeader(b[:len(b)-1]); n != 0 {
				t.Fatalf("length %d: a short header parsed", c.length)
			}
		}
	}
}

// Thousands of random headers round-trip, and Check says what the rules
// say of each.
func TestRapidHeaders(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := Header{
			Fin:    rapid.Bool().Draw(t, "fin"),
			RSV:    byte(rapid.IntRange(0, 7).Draw(t, "rsv")) << 4,
			Op:     byte(rapid.IntRange(0, 15).Draw(t, "op")),
			Masked: rapid.Bool().Draw(t, "masked"),
			Length: rapid.OneOf(rapid.Uint64Range(0, 130), rapid.Uint64Range(65530, 65540), rapid.Uint64()).Draw(t, "length"),
		}
		if h.Masked {
			copy(h.Mask[:], rapid.SliceOfN(rapid.Byte(), 4, 4).Draw(t, "mask"))
		}
		b := AppendHeader(nil, h)
		got, n := ParseHeader(append(b, 0xAA, 0xBB))
		if n != len(b) || got != h {
			t.Fatalf("parsed %+v (%d of %d bytes), wrote %+v", got, n, len(b), h)
		}
		mustMask := rapid.Bool().Draw(t, "mustMask")
		valid := h.RSV == 0 && h.Length < 1<<63 && (h.Masked || !mustMask) &&
			(h.Op <= 2 || (h.Op >= 8 && h.Op <= 10 && h.Fin && h.Length <= 125))
		if err := Check(h, mustMask); (err == nil) != valid || (err != nil && err.Code != StatusProtocolError) {
			t.Fatalf("Check(%+v, %v) = %v, want valid %v", h, mustMask, err, valid)
		}
	})
}

// Mask is its own inverse, from any key position, and agrees with the
// byte-at-a-time definition of RFC 6455 5.3.
func TestRapidMask(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		key := [4]byte(rapid.SliceOfN(rapid.Byte(), 4, 4).Draw(t, "key"))
		p := rapid.SliceOfN(rapid.Byte(), 0, 100).Draw(t, "p")
		pos := rapid.IntRange(0, 3).Draw(t, "pos")
		want := make([]byte, len(p))
		for i, c := range p {
			want[i] = c ^ key[(pos+i)%4]
		}
		got := bytes.Clone(p)
		split := rapid.IntRange(0, len(p)).Draw(t, "split")
		next := Mask(key, pos, got[:split])
		Mask(key, next, got[split:])
		if !bytes.Equal(got, want) {
			t.Fatalf("Mask % x, want % x", got, want)
		}
	})
}

func TestClose(t *testing.T) {
	for _, c := range []struct {
		p    []byte
		code uint16 // the status to echo, or the violation's
		ok   bool
	}{
		{nil, 1000, true}, {[]byte{3}, 1002, false}, {[]byte{3, 0xe8, 'o', 'k'}, 1000, true},
		{[]byte{0x0f, 0xa0}, 4000, true}, {[]byte{3, 0xed}, 1002, false}, {[]byte{3, 0xee}, 1002, false},
		{[]byte{0x03, 0xf3}, 1011, true}, {[]byte{3, 0xe8, 0xff}, 1007, false}, {[]byte{0x13, 0x88}, 1002, false},
	} {
		code, _, err := ParseClose(c.p)
		if (err == nil) != c.ok || (err == nil && code != c.code) || (err != nil && err.Code != c.code) {
			t.Errorf("ParseClose(% x) = %d, %v", c.p, code, err)
		}
	}
	long := bytes.Repeat([]byte("é"), 100) // 200 bytes: cut at a character
	p := ClosePayload(1001, string(long))
	if len(p) > MaxControl || len(p) != 124 || p[0] != 0x03 || p[1] != 0xe9 {
		t.Fatalf("ClosePayload: %d bytes % x", len(p), p[:2])
	}
	if ClosePayload(0, "x") != nil {
		t.Fatal("a close payload for code 0")
	}
}
