package client

import (
	"errors"
	"testing"
)

// The replies to calls on a subscription's socket: the fast path and the
// reflective one read the same, the subscription's own messages are not
// taken for replies, and a malformed reply is an error, never an answer.
func TestCallReplies(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		id   int64 // 0: not a reply
		data string
		code string // a tRPC error's code
		bad  bool
	}{
		{msg: `{"id":7,"result":{"type":"data","data":{"seq":3}}}`, id: 7, data: `{"seq":3}`},
		{msg: `{"id":7,"result":{"type":"data","data":{"seq":3,"duplicate":true}}}`, id: 7, data: `{"seq":3,"duplicate":true}`},
		{msg: `{"id":12,"jsonrpc":"2.0","result":{"type":"data","data":{"seq":4}}}`, id: 12, data: `{"seq":4}`},
		{msg: `{"id":9,"error":{"message":"command rejected","code":-32009,"data":{"code":"CONFLICT","httpStatus":409}}}`, id: 9, code: "CONFLICT"},
		{msg: `{"id":9,"result":{"type":"started"}}`, id: 9, bad: true},
		{msg: `{"id":9,"result":{"type":"data","data":{"seq":}}}`, id: 9, bad: true},
		{msg: `{"id":1,"result":{"type":"data","id":"3","data":{"seq":3}}}`},
		{msg: `{"id":"7","result":{"type":"data","data":{"seq":3}}}`},
		{msg: `{"id":null,"method":"reconnect"}`},
		{msg: `PONG`},
	} {
		id, ok := callID([]byte(tc.msg))
		if (tc.id != 0) != ok || id != tc.id {
			t.Errorf("%s: callID %d %v, want %d", tc.msg, id, ok, tc.id)
			continue
		}
		if !ok {
			continue
		}
		r := decodeReply([]byte(tc.msg))
		switch {
		case tc.bad:
			var e *Error
			if r.err == nil || !errors.As(r.err, &e) || e.Code != CodeInvalidResponse {
				t.Errorf("%s: %+v, want an invalid response", tc.msg, r)
			}
		case tc.code != "":
			if r.terr == nil || r.terr.Data.Code != tc.code || r.err != nil {
				t.Errorf("%s: %+v, want the error %s", tc.msg, r, tc.code)
			}
		case string(r.data) != tc.data || r.err != nil || r.terr != nil:
			t.Errorf("%s: %+v, want data %s", tc.msg, r, tc.data)
		}
	}
}
