package main

import (
	"testing"

	"github.com/subspace/kbkit/kbcore"
)

// TestPayloadPerType holds the differential test's payload generators to
// the command registry: every type has one (else the test would only send
// {} of it), and none is for a type the registry lacks.
func TestPayloadPerType(t *testing.T) {
	for _, gap := range kbcore.RegistryGaps(payloads, "payload generator (js/kbcore/wasm/gen_test.go payloads)") {
		t.Error(gap)
	}
}
