package kbcore

import "testing"

// ReadCommand keeps a type that is not a string as its JSON text, and
// reports an id that is not a string; only a cmd that is no object fails.
func TestReadCommand(t *testing.T) {
	for _, tc := range []struct {
		in, typ, id string
		idErr, err  bool
	}{
		{`{"id": "c1", "type": "edit-text", "payload": {}}`, "edit-text", "c1", false, false},
		{`{"id": null, "type": null}`, "", "", false, false},
		{`{"type": "delete"}`, "delete", "", false, false},
		{`{"id": "c1", "type": 5}`, "5", "c1", false, false},
		{`{"id": "c1", "type": ["edit-text"]}`, `["edit-text"]`, "c1", false, false},
		{`{"id": 7, "type": "edit-text"}`, "edit-text", "", true, false},
		{`{"id": {}, "type": "edit-text"}`, "edit-text", "", true, false},
		{`[1]`, "", "", false, true},
		{`"cmd"`, "", "", false, true},
	} {
		c, idErr, err := ReadCommand([]byte(tc.in))
		if (err != nil) != tc.err || (idErr != "") != tc.idErr {
			t.Errorf("%s: idErr %q, err %v", tc.in, idErr, err)
			continue
		}
		if err == nil && (c.Type != tc.typ || c.ID != tc.id) {
			t.Errorf("%s: type %q id %q, want %q %q", tc.in, c.Type, c.ID, tc.typ, tc.id)
		}
	}
}
