package broken

import (
	"slices"
	"testing"
)

// TestTable: the rows' names are unique and in order (the list --broken-server
// prints), each says what it breaks, and each constructor makes a mutation
// that changes some traffic (a row whose mutation had no hook would be a
// server that is not broken).
func TestTable(t *testing.T) {
	names := Variants()
	if len(names) != len(Table) {
		t.Fatalf("Variants lists %d names, the table has %d rows", len(names), len(Table))
	}
	if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Errorf("the names are not unique and sorted: %v", names)
	}
	for _, v := range Table {
		if v.Breaks == "" {
			t.Errorf("%s: says nothing of what it breaks", v.Name)
		}
		m := v.New()
		if m.command == nil && m.response == nil && m.upstream == nil && m.stream == nil && m.lose == nil && !m.refuseSockets {
			t.Errorf("%s: its mutation changes nothing", v.Name)
		}
		if mk, ok := Variant(v.Name); !ok || mk == nil {
			t.Errorf("%s: Variant does not find it", v.Name)
		}
	}
	if _, ok := Variant("no-such-variant"); ok {
		t.Error("Variant finds a name the table does not have")
	}
}
