package kbcore_test

import (
	"encoding/json"
	"testing"

	"github.com/subspace/kbkit/kbcore"
)

// FuzzApply feeds arbitrary documents and commands to the reducer. Seeds
// come from testdata/fuzz/FuzzApply (a sample of spec cases, committed) and
// from every spec case of the built-in spec.
func FuzzApply(f *testing.F) {
	for _, sc := range commandCases(f) {
		f.Add(sc.docJSON, sc.cmdJSON)
	}
	f.Fuzz(func(t *testing.T, docJSON, cmdJSON []byte) {
		d, err := kbcore.ParseDoc(docJSON)
		if err != nil {
			return
		}
		var c kbcore.Command
		if json.Unmarshal(cmdJSON, &c) != nil {
			return
		}
		if _, err := checkLaws(d, c); err != nil {
			t.Fatal(err)
		}
	})
}
