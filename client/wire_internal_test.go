package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/subspace/kbkit/kbcore"
)

// drawMessage draws a subscription message: the spec's event shape, with
// random changes of every kind the reflective decoder treats in its own
// way (key order, white space, case, repeats, unknown keys, other types,
// numbers that are not integers, escapes, invalid UTF-8, bad JSON).
func drawMessage(t *rapid.T) []byte {
	// rare: a change of one kind is drawn in one place out of n (n large
	// in half the messages, so that many go the fast way).
	n := rapid.SampledFrom([]int{4, 60}).Draw(t, "rarity")
	rare := func(label string) bool { return rapid.IntRange(0, n).Draw(t, label) == n/2 }
	ws := func() string { return rapid.SampledFrom([]string{"", "", "", " ", "\n"}).Draw(t, "ws") }
	str := func(label, plain string) string {
		if !rare(label + "-odd") {
			return `"` + plain + `"`
		}
		switch rapid.IntRange(0, 6).Draw(t, label+"-kind") {
		case 0:
			return `"` + plain + `\u0041"`
		case 1:
			return "\"" + plain + "\xff\""
		case 2:
			return "\"caf\xc3\xa9\""
		case 3:
			return `"` + plain // unterminated
		case 4:
			return "7"
		case 5:
			return "null"
		default:
			return `"` + plain + `"`
		}
	}
	obj := func(fields []string) string {
		perm := rapid.Permutation(fields).Draw(t, "perm")
		if n := rapid.IntRange(0, 8).Draw(t, "drop"); n < len(perm) && rare("drop?") {
			perm = append(perm[:n:n], perm[n+1:]...)
		}
		if len(perm) > 0 && rare("dup?") {
			perm = append(perm, perm[0])
		}
		var b strings.Builder
		b.WriteString(ws() + "{" + ws())
		for i, f := range perm {
			if i > 0 {
				b.WriteString(ws() + "," + ws())
			}
			b.WriteString(f)
		}
		b.WriteString(ws() + "}" + ws())
		return b.String()
	}
	key := func(k string) string {
		if !rare("key-" + k) {
			return `"` + k + `"`
		}
		if rapid.Bool().Draw(t, "key-case") {
			return `"` + strings.ToUpper(k[:1]) + k[1:] + `"`
		}
		return `"` + k + `x"`
	}
	seq := rapid.Int64Range(-2, 1<<40).Draw(t, "seq")
	seqText := fmt.Sprint(seq)
	if rare("seq?") {
		seqText = rapid.SampledFrom([]string{"1e3", "2.0", "-0", "007", `"5"`, "99999999999999999999", "-"}).Draw(t, "seqtext")
	}
	payload := rapid.SampledFrom([]string{`{"node":"n1","text":"x"}`, `{"a":[1,2.5e-3,true,false,null,{"b":"\"\\\/\b\f\n\r\t\u00e9"}]}`}).Draw(t, "payload")
	if rare("payload?") {
		payload = rapid.SampledFrom([]string{
			`{"node":"n1","text":"x"}`, `{}`, `{"a":[1,2.5e-3,true,false,null,{"b":"\"\\\/\b\f\n\r\t\u00e9"}]}`,
			"{\"t\":\"\xff\"}", `{"a":}`, `{"a":1,}`, `[1]`, `null`, `"s"`, `{"a":"\x"}`, `{"a":01}`, `{"a":1.}`, `{"a":tru}`,
			`{"a":"` + "\t" + `"}`, `{"a":-}`, `{"a":1e}`, `{"a":"\u12"}`, `{"a":-1.5E+3,"b":[]}`, `{"a":0.0e0}`,
		}).Draw(t, "odd-payload")
	}
	cmd := obj([]string{key("id") + ":" + str("cid", "3f0c-c1"), key("type") + ":" + str("ctype", rapid.SampledFrom([]string{"edit-text", "create-after", "made-up"}).Draw(t, "type")),
		key("payload") + ":" + ws() + payload})
	data := obj([]string{key("seq") + ":" + ws() + seqText, key("cmd") + ":" + cmd})
	typ := "data"
	if rare("rtype?") {
		typ = rapid.SampledFrom([]string{"started", "stopped", "Data"}).Draw(t, "rtype")
	}
	result := obj([]string{key("type") + ":" + str("rtype", typ), key("id") + ":" + str("rid", fmt.Sprint(seq)), key("data") + ":" + data})
	reqID := rapid.SampledFrom([]string{"1", "17", `"a"`}).Draw(t, "reqid")
	if rare("reqid?") {
		reqID = rapid.SampledFrom([]string{"1.5", "null", "-", "01"}).Draw(t, "odd-reqid")
	}
	fields := []string{key("id") + ":" + reqID, key("result") + ":" + result}
	if rare("extra?") {
		fields = append(fields, rapid.SampledFrom([]string{`"jsonrpc":"2.0"`, `"error":{"message":"m","code":-32000,"data":{"code":"X","httpStatus":503}}`, `"method":"other"`}).Draw(t, "extra"))
	}
	msg := obj(fields)
	if rare("trail?") {
		msg += rapid.SampledFrom([]string{"x", "{}", "]"}).Draw(t, "trail")
	}
	return []byte(msg)
}

// TestRapidFastEventIsReflective: whatever the fast decoder takes, the
// reflective decoder takes too, as an event equal in every field.
func TestRapidFastEventIsReflective(t *testing.T) {
	taken := 0
	rapid.Check(t, func(t *rapid.T) {
		b := drawMessage(t)
		fast, ok := decodeEvent(append([]byte(nil), b...))
		if !ok {
			return
		}
		taken++
		slow, data, err := (&Subscription{}).decodeMessage(b)
		switch {
		case err != nil || !data:
			t.Fatalf("fast took %q; reflective: data %v, err %v", b, data, err)
		case fast.Seq != slow.Seq || fast.TrackedID != slow.TrackedID || fast.Cmd.ID != slow.Cmd.ID ||
			fast.Cmd.Type != slow.Cmd.Type || !bytes.Equal(fast.Cmd.Payload, slow.Cmd.Payload):
			t.Fatalf("%q: fast %+v (payload %s), reflective %+v (payload %s)", b, fast, fast.Cmd.Payload, slow, slow.Cmd.Payload)
		}
	})
	t.Logf("fast decoder took %d messages", taken)
	if taken == 0 {
		t.Fatal("the fast decoder took no message")
	}
}

// TestFastEventTakesTheSpecShape: the messages servers send go the fast
// way.
func TestFastEventTakesTheSpecShape(t *testing.T) {
	for _, m := range []string{
		`{"id":1,"result":{"type":"data","id":"12","data":{"seq":12,"cmd":{"id":"3f0c","type":"edit-text","payload":{"node":"n1","text":"x"}}}}}`,
		`{"id": 1, "result": {"type": "data", "id": "12",
		  "data": {"seq": 12, "cmd": {"id": "3f0c", "type": "edit-text", "payload": {"node": "n1", "text": "x"}}}}}`,
		`{"id":1,"result":{"type":"data","id":"2","data":{"seq":2,"cmd":{"id":"c","type":"restore","payload":{"nodes":[{"id":"n1","rank":"a0","text":"\u003c\"x\""}]}}}}}`,
	} {
		ev, ok := decodeEvent([]byte(m))
		if !ok {
			t.Errorf("not taken: %s", m)
			continue
		}
		if ev.Seq != 12 && ev.Seq != 2 || ev.TrackedID != fmt.Sprint(ev.Seq) {
			t.Errorf("%s: %+v", m, ev)
		}
	}
}

// TestRapidEnvelopeIsMarshal: the envelope encoder writes json.Marshal's
// bytes.
func TestRapidEnvelopeIsMarshal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		str := func(label string) string {
			return rapid.OneOf(rapid.StringMatching(`[a-z0-9-]{0,10}`), rapid.String()).Draw(t, label)
		}
		payload := rapid.OneOf(
			rapid.Just(`{"node":"n1","text":"the quick"}`), rapid.Just(`{"a":[1,{"b":null}],"c":"\u003c\"x"}`),
			rapid.Just(`{"node": "n1"}`), rapid.Just(`{"t":"<b>"}`), rapid.Just("{\"t\":\"caf\xc3\xa9\"}"), rapid.Just(`{"a":`),
			rapid.Just(``), rapid.Just(`{"t":"\u2028"}`), rapid.Just("{\"t\":\"\xe2\x80\xa8\"}"),
			rapid.Map(rapid.StringMatching(`[a-z <>&"\\]{0,8}`), func(s string) string { return `{"text":"` + s + `"}` }),
		).Draw(t, "payload")
		env := kbcore.Envelope{ID: str("id"), DeviceID: str("device"), PageID: str("page"), Type: str("type"), Payload: json.RawMessage(payload)}
		want, _ := json.Marshal(env)
		if got := encodeEnvelope(env); string(got) != string(want) {
			t.Fatalf("%+v: encoded %s, json.Marshal %s", env, got, want)
		}
	})
}

// TestRapidPlainAckIsAnswer: the fast reading of kb.command's answer
// agrees with the reflective one whenever it takes the answer.
func TestRapidPlainAckIsAnswer(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		seq := rapid.SampledFrom([]string{"1", "42", "0", "-3", "1.5", "1e2", "007", `"4"`, "99999999999999999999"}).Draw(t, "seq")
		b := rapid.SampledFrom([]string{`{"result":{"data":{"seq":%s}}}`, `{"result":{"data":{"seq":%s}}}` + "\n",
			`{"result":{"data":{"seq":%s,"duplicate":true}}}`, `{"result":{"data":{"seq": %s}}}`, `{"result":{"data":{"seq":%s}}}x`}).Draw(t, "shape")
		body := []byte(fmt.Sprintf(b, seq))
		n, ok := plainAck(body)
		if !ok {
			return
		}
		data, terr, err := answer(200, body)
		var ack Ack
		if err != nil || terr != nil || json.Unmarshal(data, &ack) != nil || ack.Seq != n || ack.Duplicate {
			t.Fatalf("%s: plain %d; answer %s %v %v %+v", body, n, data, terr, err, ack)
		}
	})
}

// FuzzDecodeEvent: on any bytes, the fast decoder takes only what the
// reflective decoder decodes to the same event.
func FuzzDecodeEvent(f *testing.F) {
	f.Add(benchEvent)
	f.Add([]byte(`{"id":1,"result":{"type":"data","id":"2","data":{"seq":2,"cmd":{"id":"c","type":"restore","payload":{"nodes":[{"id":"n1","rank":"a0","text":"\u003c"}]}}}}}`))
	f.Add([]byte(`{"id":1,"result":{"type":"stopped"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, ok := decodeEvent(append([]byte(nil), b...))
		if !ok {
			return
		}
		slow, data, err := (&Subscription{}).decodeMessage(b)
		if err != nil || !data || fast.Seq != slow.Seq || fast.TrackedID != slow.TrackedID || fast.Cmd.ID != slow.Cmd.ID ||
			fast.Cmd.Type != slow.Cmd.Type || !bytes.Equal(fast.Cmd.Payload, slow.Cmd.Payload) {
			t.Fatalf("%q: fast %+v; reflective %+v data %v err %v", b, fast, slow, data, err)
		}
	})
}
