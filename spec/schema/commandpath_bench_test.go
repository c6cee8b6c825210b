package schema_test

import (
	"testing"

	"github.com/subspace/kbkit/internal/benchdoc"
	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/spec/schema"
)

// BenchmarkCommandPath: an edit-text envelope as the server takes it,
// parsed (and validated) and applied to a 100-node page: the payload is
// read once, by the parse, which hands its value to the reducer
// (kbcore.Parsed).
func BenchmarkCommandPath(b *testing.B) {
	d, err := benchdoc.Page(100)
	if err != nil {
		b.Fatal(err)
	}
	in := []byte(`{"id":"3f0c8a52-5d2e-4c1b-9a57-0c5b1f6e2d90","device_id":"0b1c8a52-5d2e-4c1b-9a57-0c5b1f6e2d90","page_id":"8d1c4e0a-7b3f-4f6e-a1d2-5e9c0b7a3f14","type":"edit-text","payload":{"node":"g0k10","text":"the quick brown fox jumps over the lazy dog"}}`)
	b.ReportAllocs()
	for b.Loop() {
		env, err := schema.ParseEnvelope(in)
		if err != nil {
			b.Fatal(err)
		}
		if r := kbcore.Apply(d, env.Command()); r.Rejected != nil {
			b.Fatal(r.Rejected)
		}
	}
}
