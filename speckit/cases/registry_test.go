package cases

import (
	"testing"

	"github.com/subspace/kbkit/kbcore"
)

// TestCasesPerType holds the spec's command cases to the command registry:
// each type has spec/commands/<type>.yaml, with at least one case that the
// type accepts and one that it rejects (docs/adding-a-command.md).
func TestCasesPerType(t *testing.T) {
	accepted, rejected := map[string]int{}, map[string]int{}
	for _, c := range ForTest(t) {
		if c.Suite() != SuiteCommands {
			continue
		}
		cmd, _ := c.When["cmd"].(map[string]any)
		typ, _ := cmd["type"].(string)
		if _, ok := c.Then["rejected"]; ok {
			rejected[typ]++
		} else {
			accepted[typ]++
		}
	}
	for _, typ := range kbcore.Types {
		if accepted[typ] == 0 {
			t.Errorf("%s: no accepted case (spec/commands/%s.yaml)", typ, typ)
		}
		if rejected[typ] == 0 {
			t.Errorf("%s: no rejected case (spec/commands/%s.yaml)", typ, typ)
		}
	}
}
