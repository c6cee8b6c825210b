package client

import (
	"testing"
)

var benchEvent = []byte(`{"id":1,"result":{"type":"data","id":"4711","data":{"seq":4711,"cmd":{"id":"3f0c8a52-5d2e-4c1b-9a57-0c5b1f6e2d90","type":"edit-text","payload":{"node":"8d1c4e0a-7b3f-4f6e-a1d2-5e9c0b7a3f14","text":"the quick brown fox jumps over the lazy dog whi"}}}}}`)

// BenchmarkEventDecode is one kb.onPage event message decoded: the fast
// decoder, the reflective one (the only one before), and a subscription
// of a page whose ring already holds it (another window decoded it).
func BenchmarkEventDecode(b *testing.B) {
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			raw := append([]byte(nil), benchEvent...)
			if _, ok := decodeEvent(raw); !ok {
				b.Fatal("not taken")
			}
		}
	})
	b.Run("reflective", func(b *testing.B) {
		b.ReportAllocs()
		s := &Subscription{}
		for b.Loop() {
			if _, ok, err := s.decodeMessage(benchEvent); !ok || err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("shared", func(b *testing.B) {
		b.ReportAllocs()
		p := &pageShare{}
		ev, _ := decodeEvent(append([]byte(nil), benchEvent...))
		p.store(ev, append([]byte(nil), benchEvent...))
		for b.Loop() {
			if p.lookup(4711, benchEvent) == nil {
				b.Fatal("not found")
			}
		}
	})
}
