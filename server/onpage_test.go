package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/subspace/kbkit/wire"
)

// kb.onPage's lastEventId (spec/PROTOCOL.md 4.4): a JSON string of
// decimal digits, in input or params; params wins; null is absent;
// anything else is BAD_REQUEST.
func TestParseOnPageLastEventID(t *testing.T) {
	const page = "9c2e0000-0000-4000-8000-000000000001"
	in := func(last string) json.RawMessage {
		if last == "" {
			return json.RawMessage(`{"page_id":"` + page + `"}`)
		}
		return json.RawMessage(`{"page_id":"` + page + `","lastEventId":` + last + `}`)
	}
	for _, tc := range []struct {
		input, params string // raw JSON ("" absent)
		after         int64
		bad           string // the error's text, when BAD_REQUEST
	}{
		{"", "", 0, ""},
		{`"3"`, "", 3, ""},
		{"", `"3"`, 3, ""},
		{`"1"`, `"3"`, 3, ""},
		{`"3"`, `null`, 3, ""},
		{`null`, "", 0, ""},
		{`"0"`, "", 0, ""},
		{`"007"`, "", 7, ""},
		{"", `3`, 0, "must be a string"},
		{`3`, "", 0, "must be a string"},
		{`"3"`, `1`, 0, "must be a string"},
		{"", `""`, 0, "is not a seq"},
		{`""`, "", 0, "is not a seq"},
		{`"3"`, `""`, 0, "is not a seq"},
		{"", `"+3"`, 0, "is not a seq"},
		{"", `"-1"`, 0, "is not a seq"},
		{"", `"1.5"`, 0, "is not a seq"},
		{"", `"x"`, 0, "is not a seq"},
		{"", `"99999999999999999999"`, 0, "is not a seq"},
		{"", `["3"]`, 0, "must be a string"},
	} {
		var params json.RawMessage
		if tc.params != "" {
			params = json.RawMessage(tc.params)
		}
		id, after, cerr := parseOnPage(in(tc.input), params)
		what := "input " + tc.input + ", params " + tc.params
		switch {
		case tc.bad == "" && cerr != nil:
			t.Errorf("%s: %s", what, cerr.message)
		case tc.bad == "" && (id != page || after != tc.after):
			t.Errorf("%s: page %q after %d, want after %d", what, id, after, tc.after)
		case tc.bad != "" && cerr == nil:
			t.Errorf("%s: accepted (after %d), want BAD_REQUEST", what, after)
		case tc.bad != "" && (cerr.code != wire.CodeBadRequest || !strings.Contains(cerr.message, tc.bad)):
			t.Errorf("%s: %s %q, want BAD_REQUEST saying %q", what, cerr.code, cerr.message, tc.bad)
		}
	}
}
