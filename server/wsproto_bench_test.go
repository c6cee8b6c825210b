package server

import (
	"bytes"
	"testing"

	"github.com/subspace/kbkit/internal/wsframe"
)

var benchWSEvent = []byte(`{"id":1,"result":{"type":"data","id":"4711","data":{"seq":4711,"cmd":{"id":"3f0c8a52-5d2e-4c1b-9a57-0c5b1f6e2d90","type":"edit-text","payload":{"node":"8d1c4e0a-7b3f-4f6e-a1d2-5e9c0b7a3f14","text":"the quick brown fox jumps over the lazy dog whi"}}}}}`)

// BenchmarkWSFrameRead is the server's frame reader taking one masked
// text message (a client's kb.command size) from bytes already read.
func BenchmarkWSFrameRead(b *testing.B) {
	key := [4]byte{0x11, 0x22, 0x33, 0x44}
	frame := wsframe.AppendMasked(nil, true, wsframe.OpText, key, benchWSEvent)
	frames := bytes.Repeat(frame, 1024)
	fr := &frameReader{wsframe.Reader{Limit: 1 << 20, MustMask: true, Control: func(byte, []byte) {}}}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%1024 == 0 {
			fr.Pre = frames
		}
		op, m, cerr := fr.next()
		if cerr != nil || op != wsframe.OpText || len(m) != len(benchWSEvent) {
			b.Fatal(cerr)
		}
	}
}

// BenchmarkWSFrameWrite is the server's writer appending one event frame
// (a subscription's prefix and the shared event) to a batch buffer.
func BenchmarkWSFrameWrite(b *testing.B) {
	prefix, ev := benchWSEvent[:40], benchWSEvent[40:]
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf = wsframe.AppendFrame(buf[:0], wsframe.OpText, prefix, ev)
	}
	if len(buf) != len(benchWSEvent)+4 {
		b.Fatal(len(buf))
	}
}

// BenchmarkParseCommand is kb.command's input validated, decoded and its
// payload canonicalized (parseEnvelope), for an edit-text envelope.
func BenchmarkParseCommand(b *testing.B) {
	in := []byte(`{"id":"3f0c8a52-5d2e-4c1b-9a57-0c5b1f6e2d90","device_id":"0b1c8a52-5d2e-4c1b-9a57-0c5b1f6e2d90","page_id":"8d1c4e0a-7b3f-4f6e-a1d2-5e9c0b7a3f14","type":"edit-text","payload":{"node":"n12","text":"the quick brown fox jumps over the lazy dog"}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, cerr := parseEnvelope(in); cerr != nil {
			b.Fatal(cerr)
		}
	}
}
