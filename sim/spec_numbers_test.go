package sim

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/subspace/kbkit/spec"
	"github.com/subspace/kbkit/speckit/adapter"
)

// The numbers spec/ADAPTER.md states are the code's: when an undo and a
// redo are owed to a foreign window, and how long init may take.
func TestSpecStatesOwedIntents(t *testing.T) {
	b, err := fs.ReadFile(spec.FS, "ADAPTER.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(b)), " ")
	words := map[int]string{4: "four", 6: "six", 10: "10"}
	for _, want := range []string{
		"once it has been given " + words[owedUndoAfter] + " commands",
		"undone and been given " + words[owedRedoAfter] + ")",
		"`init` has at least " + words[int(adapter.InitTimeout.Seconds())] + "s whatever `--timeout`",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("spec/ADAPTER.md does not say %q", want)
		}
	}
}
