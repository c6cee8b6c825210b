package main

import (
	"testing"

	"github.com/subspace/kbkit/kbcore"
)

// TestPayloadPerType holds the differential test's payload generators to
// the command registry: every type has one (else the test would only send
// {} of it), and none is for a type the registry lacks.
func TestPayloadPerType(t *testing.T) {
	for _, typ := range kbcore.Types {
		if payloads[typ] == nil {
			t.Errorf("%s: no payload generator (js/kbcore/wasm/gen_test.go payloads)", typ)
		}
	}
	for typ := range payloads {
		if _, ok := kbcore.Lookup(typ); !ok {
			t.Errorf("%s: a payload generator (js/kbcore/wasm/gen_test.go payloads) for a type the registry (kbcore/registry.go) does not have", typ)
		}
	}
}
