package schema

import (
	"errors"
	"strings"
	"testing"
)

func TestAdapterMessages(t *testing.T) {
	doc := `{"nodes":[{"id":"a","kind":"text","parent":null,"rank":"a0","text":"x"}],"page":{"aliases":[],"dir":"","id":"Q","merged_into":null,"title":"T"}}`
	valid := []string{
		`{"type":"init","msg_id":1,"protocol":1}`,
		`{"type":"init_ok","in_reply_to":1,"implementation":"x","version":"1","suites":["commands"],"commands":["edit-text"],"extra":true}`,
		`{"type":"apply","msg_id":2,"doc":` + doc + `,"cmd":{"id":"c1","type":"no-such-type","payload":"not an object"}}`,
		`{"type":"apply_ok","in_reply_to":2,"doc":` + doc + `,"inverse":[],"index":{"a":{"refs":[{"kind":"link","title":"B"}]}}}`,
		`{"type":"apply_ok","in_reply_to":2,"rejected":{"code":"node-not-found","message":"m"}}`,
		`{"type":"tokenize","msg_id":3,"formula":"=A1"}`,
		`{"type":"tokenize_ok","in_reply_to":3,"refs":[],"label":null,"deps":[{"cell":"A1"},{"page":"P","label":"cash"}]}`,
		`{"type":"window","msg_id":4,"given":{"doc":` + doc + `,"seq":0},"steps":[{"undo":{"ids":["u1"]}},{"snapshot":{"doc":` + doc + `,"seq":2,"outcomes":{"c1":{"rejected":{"code":"cycle"}}}}}]}`,
		`{"type":"window_ok","in_reply_to":4,"states":[{"seq":0,"pending":[],"rendered":` + doc + `,"server":` + doc + `,"actions":["toast:nothing-to-undo"]}]}`,
		`{"type":"plan","msg_id":5,"workspace":"00000000-0000-0000-0000-0000000000aa","pages":[` + doc + `],"page":"Q","cmd":{"id":"c1","type":"edit-text","payload":{}}}`,
		`{"type":"plan_ok","in_reply_to":5,"effects":[{"page":"Q","cmd":{"id":"c1","type":"edit-text","payload":{}}}],"pages":{"Q":` + doc + `}}`,
		`{"type":"error","in_reply_to":null,"code":12,"text":"bad"}`,
		`{"type":"init","msg_id":1,"protocol":2}`,
		`{"type":"init_ok","in_reply_to":1,"suites":["client"],"intents":["edit-text","undo"]}`,
		`{"type":"open","msg_id":6,"window":"w4","url":"http://127.0.0.1:1","token":"kbk_x","device_id":"00000000-0000-0000-0000-0000000000aa","page_id":"00000000-0000-0000-0000-0000000000bb"}`,
		`{"type":"open_ok","in_reply_to":6,"state":{"seq":4,"pending":[],"rendered":` + doc + `,"server":` + doc + `,"toasts":[]}}`,
		`{"type":"intent","msg_id":7,"window":"w4","intent":"edit-text","id":"c1","payload":{"node":"a","text":"y"}}`,
		`{"type":"intent","msg_id":8,"window":"w4","intent":"undo","ids":["u1","u2"]}`,
		`{"type":"intent_ok","in_reply_to":7,"state":{"seq":4,"pending":["c1"],"rendered":` + doc + `,"toasts":[{"code":"node-not-found","id":"c0"}],"awaiting":false}}`,
		`{"type":"state","msg_id":9,"window":"w4"}`,
		`{"type":"state_ok","in_reply_to":9,"state":{"seq":5,"pending":[],"rendered":` + doc + `,"toasts":[]}}`,
		`{"type":"close","msg_id":10,"window":"w4"}`,
		`{"type":"close_ok","in_reply_to":10}`,
	}
	for _, m := range valid {
		if err := ValidateAdapterMessage([]byte(m)); err != nil {
			t.Errorf("%s: %v", m, err)
		}
	}
	invalid := map[string]string{
		`{"type":"init","msg_id":1,"protocol":3}`:                                                                            "protocol",
		`{"type":"init_ok","in_reply_to":1,"suites":["client"]}`:                                                             "intents: missing",
		`{"type":"init_ok","in_reply_to":1,"suites":["client"],"intents":["fly"]}`:                                           `intents[0]: "fly" is not one of`,
		`{"type":"open","msg_id":6,"window":"w4","token":"t","device_id":"x","page_id":"y"}`:                                 "url: missing",
		`{"type":"intent","msg_id":7,"window":"w4"}`:                                                                         "intent: missing",
		`{"type":"state_ok","in_reply_to":9,"state":{"seq":5,"pending":[],"toasts":[]}}`:                                     "state.rendered: missing",
		`{"type":"init_ok","in_reply_to":1}`:                                                                                 "suites: missing",
		`{"type":"init_ok","in_reply_to":1,"suites":["frobs"]}`:                                                              `suites[0]: "frobs" is not one of`,
		`{"type":"apply","doc":` + doc + `,"cmd":{}}`:                                                                        "msg_id: missing",
		`{"type":"apply_ok","in_reply_to":2,"doc":` + doc + `,"index":{}}`:                                                   "inverse: missing",
		`{"type":"apply_ok","in_reply_to":2,"doc":` + doc + `,"inverse":[],"index":{},"rejected":{"code":"c","message":""}}`: "",
		`{"type":"tokenize","msg_id":3,"text":"a","formula":"=A1"}`:                                                          "",
		`{"type":"tokenize_ok","in_reply_to":3,"refs":[{"kind":"wiki","title":"B"}],"label":null,"deps":[]}`:                 `refs[0].kind: "wiki" is not one of`,
		`{"type":"window_ok","in_reply_to":4,"states":[{"seq":0,"rendered":` + doc + `,"server":` + doc + `,"actions":[]}]}`: "states[0].pending: missing",
		`{"type":"window","msg_id":4,"given":{"doc":` + doc + `,"seq":0},"steps":[{"local":{},"undo":{"ids":[]}}]}`:          "steps[0]: must have exactly one key",
		`{"type":"plan_ok","in_reply_to":5,"effects":[]}`:                                                                    "pages: missing",
		`{"type":"error","in_reply_to":"x","code":13}`:                                                                       "",
		`{"type":"frobnicate","msg_id":1}`:                                                                                   "unknown adapter message type",
		`[1]`:                                                                                                                "must be an object",
	}
	for m, want := range invalid {
		err := ValidateAdapterMessage([]byte(m))
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want a validation error", m, err)
			continue
		}
		if want != "" && !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want it to say %q", m, err, want)
		}
	}
}
