package fuzz

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/speckit/cases"
)

// TestGeneratorPerType holds payloadGens to the command registry: every
// type has a generator (without one, spec fuzz would only send invalid
// payloads of it), and no generator is for a type the registry lacks.
func TestGeneratorPerType(t *testing.T) {
	for _, gap := range kbcore.RegistryGaps(payloadGens, "fuzz generator (speckit/fuzz/gen_cmd.go payloadGens)") {
		t.Error(gap)
	}
	// Each generator draws, against a drawn document, payloads the
	// reducer accepts at least now and then.
	for _, typ := range kbcore.Types {
		if payloadGens[typ] == nil {
			continue
		}
		accepted := 0
		for i := range 400 {
			s := newRandomSource(rand.New(rand.NewPCG(11, uint64(i))))
			c, err := Expected(context.Background(), cases.Reference{}, genCommandCase(s, []string{typ}))
			if err == nil && c.Then["rejected"] == nil {
				accepted++
			}
		}
		if accepted == 0 {
			t.Errorf("%s: the fuzz generator (speckit/fuzz/gen_cmd.go payloadGens) drew no payload the reducer accepts in 400 tries", typ)
		}
	}
}
