package cases

import (
	"encoding/json"
	"fmt"
	"strings"
)

// A case that expects an acceptance and gets a rejection (or the reverse)
// has nothing to diff line by line; its report shows the whole expected
// result ("-") and the whole result got ("+"), so a reader sees what the
// spec wanted without opening the case file.

// part is one titled JSON value of a result: doc, inverse, effects, ...
type part struct {
	name  string
	value any
}

// verdictBlock renders a result as sign-prefixed lines: the head line
// ("accepted:" or "rejected: code (message)") and each part indented
// under it in canonical, indented JSON.
func verdictBlock(sign, head string, parts ...part) string {
	var sb strings.Builder
	sb.WriteString(sign + " " + head + "\n")
	for _, p := range parts {
		lines := strings.Split(Canon(p.value), "\n")
		sb.WriteString(sign + "   " + p.name + ": " + lines[0] + "\n")
		for _, l := range lines[1:] {
			sb.WriteString(sign + "   " + l + "\n")
		}
	}
	return sb.String()
}

// rejectedHead is the head line of a rejection got from an implementation.
func rejectedHead(r *Rejected) string {
	if r.Message == "" {
		return "rejected: " + r.Code
	}
	return fmt.Sprintf("rejected: %s (%s)", r.Code, r.Message)
}

// wantedParts lists the keys a case's then states besides doc (inverse,
// index, effects, pages), in the order they are compared.
func wantedParts(then map[string]any, keys ...string) []part {
	var out []part
	for _, k := range keys {
		if v, ok := then[k]; ok {
			out = append(out, part{k, v})
		}
	}
	return out
}

// rawParts decodes an implementation's JSON values for a block; an
// undecodable value is shown as its text.
func rawPart(name string, raw json.RawMessage) part {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return part{name, string(raw)}
	}
	return part{name, v}
}

// stepHead heads the diff of one key of a window step: "step N key:"
// (N from 1), then the step's event as the request sent it (long events
// cut short), as a context line, so the diff reads without the case file.
func stepHead(i int, key string, event json.RawMessage) string {
	const max = 200
	s := string(event)
	if len(s) > max {
		cut := max
		for cut > 0 && s[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
			cut--
		}
		s = s[:cut] + "…"
	}
	return fmt.Sprintf("step %d %s:\n  event: %s\n", i+1, key, s)
}
