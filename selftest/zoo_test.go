package selftest

import (
	"strings"
	"testing"

	"github.com/subspace/kbkit/sim"
)

// Each zoo entry names its original (a link to the thread), its
// counterpart here, where it lives and a checker the simulator has.
func TestZooEntries(t *testing.T) {
	checkers := map[string]bool{}
	for _, c := range sim.Checks {
		checkers[c.Name] = true
	}
	seen := map[string]bool{}
	for _, z := range Zoo {
		if seen[z.Name] {
			t.Errorf("%s is in the zoo twice", z.Name)
		}
		seen[z.Name] = true
		if z.Kind != KindServer && z.Kind != KindClient {
			t.Errorf("%s: kind %q, want %q or %q", z.Name, z.Kind, KindServer, KindClient)
		}
		if z.Original == "" || z.Counterpart == "" || len(z.Links) == 0 {
			t.Errorf("%s: no original, counterpart or link", z.Name)
		}
		for _, l := range z.Links {
			if !strings.HasPrefix(l, "https://github.com/") {
				t.Errorf("%s: link %q is not a thread's address", z.Name, l)
			}
		}
		if !checkers[z.Checker] {
			t.Errorf("%s: no checker %q", z.Name, z.Checker)
		}
	}
	if len(Zoo) < 5 {
		t.Errorf("the zoo holds %d anomalies, want at least five", len(Zoo))
	}
}
