package cases_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/subspace/kbkit/speckit/cases"
)

// A case file of any spec_version this kbkit knows runs; a newer, an
// absent or a nonsense one is refused, saying which versions it reads.
func TestSpecVersionsRead(t *testing.T) {
	body := "cases:\n  - id: x/y\n    description: d\n    given: {doc: {nodes: []}}\n    when: {cmd: {id: c, type: delete, payload: {node: a}}}\n    then: {rejected: node-not-found}\n"
	for v := cases.MinSpecVersion; v <= cases.SpecVersion; v++ {
		f, err := cases.Parse("f.yaml", []byte("spec_version: "+strconv.Itoa(v)+"\n"+body))
		if err != nil || len(f.Cases) != 1 {
			t.Errorf("spec_version %d: %v", v, err)
		}
	}
	for _, tc := range []struct{ head, want string }{
		{"spec_version: " + strconv.Itoa(cases.SpecVersion+1) + "\n", "is newer than this kbkit"},
		{"", "no spec_version"},
		{"spec_version: -1\n", "is not a version"},
	} {
		_, err := cases.Parse("f.yaml", []byte(tc.head+body))
		if !errors.Is(err, cases.ErrFormat) || !strings.Contains(err.Error(), tc.want) ||
			!strings.Contains(err.Error(), "reads "+strconv.Itoa(cases.MinSpecVersion)+" to "+strconv.Itoa(cases.SpecVersion)) {
			t.Errorf("%q: %v, want an error saying %q and the versions read", tc.head, err, tc.want)
		}
	}
}
