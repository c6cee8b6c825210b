package wiresuite

import (
	"encoding/json"
	"slices"
	"testing"
)

// editSubscriptions rewrites each kb.onPage subscription message a client
// sends (params, and params.input as a map) before the server reads it.
func editSubscriptions(edit func(params, input map[string]any)) func([]byte) []byte {
	return func(b []byte) []byte {
		var m map[string]any
		if json.Unmarshal(b, &m) != nil || m["method"] != "subscription" {
			return b
		}
		params, _ := m["params"].(map[string]any)
		if params == nil || params["path"] != "kb.onPage" {
			return b
		}
		input, _ := params["input"].(map[string]any)
		if input == nil {
			input = map[string]any{}
			params["input"] = input
		}
		edit(params, input)
		out, _ := json.Marshal(m)
		return out
	}
}

// Servers that read lastEventId otherwise than PROTOCOL.md 4.4 says,
// each modelled by rewriting the subscriptions on their way in, fail the
// check of that reading and pass the others.
func TestBrokenLastEventID(t *testing.T) {
	env := start(t, nil)
	ids := []string{"ws-last-event-id", "ws-last-event-id-input", "ws-bad-last-event-id"}
	for _, tc := range []struct {
		name string
		edit func(params, input map[string]any)
		fail []string
	}{
		{"ignores input.lastEventId", func(_, input map[string]any) { delete(input, "lastEventId") },
			[]string{"protocol/ws-last-event-id-input", "protocol/ws-bad-last-event-id"}},
		{"lets input win over params", func(params, input map[string]any) {
			if _, ok := input["lastEventId"]; ok {
				delete(params, "lastEventId")
			}
		}, []string{"protocol/ws-last-event-id-input"}},
		{"takes a null params.lastEventId as from the start", func(params, input map[string]any) {
			if v, ok := params["lastEventId"]; ok && v == nil {
				delete(input, "lastEventId")
			}
		}, []string{"protocol/ws-last-event-id-input"}},
		{"accepts a number", func(params, input map[string]any) {
			for _, m := range []map[string]any{params, input} {
				if n, ok := m["lastEventId"].(float64); ok {
					m["lastEventId"] = jsonNumber(n)
				}
			}
		}, []string{"protocol/ws-bad-last-event-id"}},
		{`takes "" as absent`, func(params, input map[string]any) {
			for _, m := range []map[string]any{params, input} {
				if m["lastEventId"] == "" {
					delete(m, "lastEventId")
				}
			}
		}, []string{"protocol/ws-bad-last-event-id"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			broken := *env
			broken.BaseURL = wsFront(t, env, func(send func([]byte), b []byte) { send(b) }, editSubscriptions(tc.edit))
			results := runHostile(t, &broken, ids...)
			var pass []string
			for _, id := range ids {
				if !slices.Contains(tc.fail, "protocol/"+id) {
					pass = append(pass, "protocol/"+id)
				}
			}
			expectFailures(t, results, tc.fail, pass)
		})
	}
}

func jsonNumber(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}
