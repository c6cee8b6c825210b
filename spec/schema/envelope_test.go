package schema

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/speckit/cases"
)

// checkAgreement holds the one-pass parser to the schema on b: whatever it
// accepts the schema accepts, decoded exactly as DecodeStrict decodes it;
// and, when complete is set, whatever the schema accepts of a one-pass
// type it accepts too.
func checkAgreement(t *testing.T, name string, b []byte, complete bool) (fast bool) {
	t.Helper()
	env, ok := fastEnvelope(b)
	canonical := ok && env.Parsed.Canonical
	serr := ValidateEnvelope(b)
	if canonical {
		// What the one pass calls canonical is what kbcore.Canonical
		// returns unchanged (the server then skips that scan).
		if !ok {
			t.Fatalf("%s: canonical but not accepted: %s", name, b)
		}
		c, err := kbcore.Canonical(env.Payload)
		if err != nil || !bytes.Equal(c, env.Payload) {
			t.Fatalf("%s: the one pass calls payload %s canonical; kbcore.Canonical gives %s, %v", name, env.Payload, c, err)
		}
	}
	if ok {
		if serr != nil {
			t.Fatalf("%s: one-pass parser accepts %s, the schema says %v", name, b, serr)
		}
		var want kbcore.Envelope
		if err := kbcore.DecodeStrict(b, &want); err != nil {
			t.Fatalf("%s: one-pass parser accepts %s, DecodeStrict says %v", name, b, err)
		}
		if want.ID != env.ID || want.DeviceID != env.DeviceID || want.PageID != env.PageID || want.Type != env.Type ||
			!bytes.Equal(want.Payload, env.Payload) {
			t.Fatalf("%s: one-pass decoding %+v, DecodeStrict %+v", name, env, want)
		}
	}
	// ParseEnvelope agrees with the schema whichever way it goes.
	penv, perr := ParseEnvelope(b)
	if (perr == nil) != (serr == nil) {
		t.Fatalf("%s: ParseEnvelope says %v, the schema %v", name, perr, serr)
	}
	if perr == nil {
		checkParsed(t, name, penv)
	}
	if complete && !ok && serr == nil {
		var probe struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(b, &probe)
		if _, fastType := fastShapes[probe.Type]; fastType {
			t.Fatalf("%s: the schema accepts %s but the one-pass parser does not", name, b)
		}
	}
	if perr == nil && penv.Parsed.Canonical != canonical {
		t.Fatalf("%s: ParseEnvelope's canonical %v, the one pass's %v", name, penv.Parsed.Canonical, canonical)
	}
	if ok && (penv.ID != env.ID || !bytes.Equal(penv.Payload, env.Payload)) {
		t.Fatalf("%s: ParseEnvelope decodes differently", name)
	}
	return ok
}

// checkParsed holds what ParseEnvelope's Parsed vouches for to the
// payload beside it: the value is what the reducer's own decoding gives,
// and bytes called canonical are what kbcore.Canonical returns.
func checkParsed(t *testing.T, name string, env kbcore.Envelope) {
	t.Helper()
	if env.Parsed.Canonical {
		if c, err := kbcore.Canonical(env.Payload); err != nil || !bytes.Equal(c, env.Payload) {
			t.Fatalf("%s: Parsed calls payload %s canonical; kbcore.Canonical gives %s, %v", name, env.Payload, c, err)
		}
	}
	if env.Parsed.Value == nil {
		return
	}
	want, ok := kbcore.NewPayload(env.Type)
	if !ok {
		t.Fatalf("%s: a parsed value for the unknown type %q", name, env.Type)
	}
	if err := kbcore.DecodeStrict(env.Payload, want); err != nil {
		t.Fatalf("%s: a parsed value %+v for payload %s, which DecodeStrict refuses: %v", name, env.Parsed.Value, env.Payload, err)
	}
	if !reflect.DeepEqual(want, env.Parsed.Value) {
		t.Fatalf("%s: payload %s parsed as %s, DecodeStrict gives %s", name, env.Payload, dump(env.Parsed.Value), dump(want))
	}
}

func dump(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestFastEnvelopeAgreesWithSchema runs every command case of the spec
// through both parsers, as the server receives it.
func TestFastEnvelopeAgreesWithSchema(t *testing.T) {
	fast, total := 0, 0
	for _, c := range specCases(t) {
		if c.Suite() != cases.SuiteCommands {
			continue
		}
		typ, payload := cmdParts(t, c)
		env := map[string]any{"id": envID, "device_id": envDevice, "page_id": envPage, "type": typ}
		if payload != nil {
			env["payload"] = json.RawMessage(payload)
		}
		b, _ := json.Marshal(env)
		total++
		if checkAgreement(t, c.ID, b, true) {
			fast++
		}
		// The payload before the type, and pretty-printed.
		alt := []byte(`{"payload":` + string(payload) + `,"type":"` + typ + `","id":"` + envID +
			`","device_id":"` + envDevice + `","page_id":"` + envPage + `"}`)
		if payload != nil {
			checkAgreement(t, c.ID+" (payload first)", alt, true)
		}
		var pretty bytes.Buffer
		if json.Indent(&pretty, b, " ", "\t") == nil {
			checkAgreement(t, c.ID+" (indented)", pretty.Bytes(), true)
		}
	}
	if fast == 0 || total == 0 {
		t.Fatalf("one-pass parser decided %d of %d command cases", fast, total)
	}
	t.Logf("one-pass parser decided %d of %d command cases", fast, total)
}

// TestFastEnvelopeMutations mutates valid envelopes byte by byte and by
// tokens (a seeded, bounded run of what FuzzParseEnvelope explores).
func TestFastEnvelopeMutations(t *testing.T) {
	seeds := fastSeeds()
	rng := rand.New(rand.NewPCG(12, 34))
	tokens := []string{`"`, `\`, `\u0061`, `null`, `{}`, `[]`, `,`, `:`, `1`, `"a"`, `"id"`, "\x00", "\xff", " ", `"node"`,
		`"kind":"code"`, `"rank":null`, `"text":"x"`, `"A1"`, `"A0"`, `"ZZZZ1"`}
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for i := 0; i < n; i++ {
		b := []byte(seeds[rng.IntN(len(seeds))])
		for m := rng.IntN(3) + 1; m > 0; m-- {
			p := rng.IntN(len(b) + 1)
			switch rng.IntN(3) {
			case 0: // delete a byte
				if p < len(b) {
					b = append(b[:p:p], b[p+1:]...)
				}
			case 1: // insert a token
				b = append(b[:p:p], append([]byte(tokens[rng.IntN(len(tokens))]), b[p:]...)...)
			default: // change a byte
				if p < len(b) {
					b[p] = byte(rng.IntN(128))
				}
			}
		}
		checkAgreement(t, "mutation", b, false)
	}
}

func FuzzParseEnvelope(f *testing.F) {
	for _, s := range fastSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkAgreement(t, "fuzz", b, false) })
}

func fastSeeds() []string {
	head := `"id":"` + envID + `","device_id":"` + envDevice + `","page_id":"` + envPage + `"`
	return []string{
		`{` + head + `,"type":"edit-text","payload":{"node":"a","text":"x\n\"y\" \u00e9"}}`,
		`{` + head + `,"type":"create-after","payload":{"after":"a","parent":null,"node":"b","text":"","kind":"table","rank":"a0V"}}`,
		`{` + head + `,"type":"move-node","payload":{"node":"a","parent":null,"after":"b","rank":null}}`,
		`{"type":"indent",` + head + `,"payload":{"node":"n_1-x"}}`,
		`{` + head + `,"payload":{"node":"z"},"type":"outdent"}`,
		`{` + head + `,"type":"delete","payload":{"node":"a"}}`,
		`{` + head + `,"type":"set-cell","payload":{"node":"t","cell":"AB12","value":"=A1+1"}}`,
		`{` + head + `,"type":"merge-page","payload":{"into":"` + envPage + `"}}`,
		`{` + head + `,"type":"create-page","payload":{"title":"Home"}}`,
	}
}

func BenchmarkParseEnvelope(b *testing.B) {
	env := []byte(fastSeeds()[0])
	b.Run("one-pass", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ParseEnvelope(env); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("schema+decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := ValidateEnvelope(env); err != nil {
				b.Fatal(err)
			}
			var e kbcore.Envelope
			if err := kbcore.DecodeStrict(env, &e); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestParseEnvelopeCanonical: the one pass knows a canonical payload as
// such, and calls nothing canonical that is not (white space, keys out of
// order, escapes, invalid UTF-8); the payload is the same bytes either way.
func TestParseEnvelopeCanonical(t *testing.T) {
	head := `{"id":"` + envID + `","device_id":"` + envDevice + `","page_id":"` + envPage + `","type":`
	for _, c := range []struct {
		env  string
		want bool
	}{
		{head + `"edit-text","payload":{"node":"a","text":"x é <&>"}}`, true},
		{head + `"move-node","payload":{"after":null,"node":"a","parent":"p"}}`, true},
		{head + `"set-cell","payload":{"cell":"A1","node":"t","value":"=1"}}`, true},
		{head + `"indent","payload":{"node":"n"}}`, true},
		{`{"payload":{"node":"a","text":"x"},"type":"edit-text","id":"` + envID + `","device_id":"` + envDevice + `","page_id":"` + envPage + `"}`, true},
		{head + `"edit-text","payload":{"text":"x","node":"a"}}`, false},
		{head + `"edit-text","payload":{"node":"a", "text":"x"}}`, false},
		{head + `"edit-text","payload":{ "node":"a","text":"x"}}`, false},
		{head + `"edit-text","payload":{"node":"a","text":"x"} }`, true}, // outside the payload
		{head + `"edit-text","payload":{"node" :"a","text":"x"}}`, false},
		{head + `"edit-text","payload":{"node":"a","text":"x\n"}}`, false},
		{head + `"edit-text","payload":{"node":"a","text":"x\u00e9"}}`, false},
		{head + "\"edit-text\",\"payload\":{\"node\":\"a\",\"text\":\"x\xff\"}}", false},
	} {
		env, err := ParseEnvelope([]byte(c.env))
		if err != nil {
			t.Fatalf("%s: %v", c.env, err)
		}
		canonical := env.Parsed.Canonical
		checkParsed(t, c.env, env)
		if c.want && env.Parsed.Value == nil {
			t.Errorf("%s: a payload of plain strings, yet no parsed value (the reducer would read it again)", c.env)
		}
		if canonical != c.want {
			t.Errorf("%s: canonical %v, want %v", c.env, canonical, c.want)
		}
		if p, err := kbcore.Canonical(env.Payload); c.want && (err != nil || !bytes.Equal(p, env.Payload)) {
			t.Errorf("%s: called canonical, but Canonical changes it to %s", c.env, p)
		}
	}
}
