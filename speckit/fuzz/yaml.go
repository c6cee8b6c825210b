package fuzz

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/subspace/kbkit/speckit/cases"
)

// CaseYAML writes c as one entry of a case file's `cases:` list (two
// spaces of indent, the way spec/*.yaml are written): id, description,
// given, when, then or steps, small mappings and lists in flow style.
// Every string that is not plain printable ASCII is double-quoted with
// escapes (\u00e9, \u0301, \u202e, ...), so invisible and combining
// characters survive a copy and paste and the case means exactly what
// the fuzzer sent.
//
// A case of the canonical suite is an entry of spec/canonical.json
// instead (canonicalEntry): its input's bytes, as sent, are part of it.
func CaseYAML(c cases.Case) string {
	if c.Suite() == cases.SuiteCanonical {
		return canonicalEntry(c)
	}
	var b strings.Builder
	b.WriteString("  - id: " + scalar(c.ID) + "\n")
	b.WriteString("    description: " + scalar(c.Description) + "\n")
	for _, k := range []string{"given", "when", "then"} {
		m := map[string]map[string]any{"given": c.Given, "when": c.When, "then": c.Then}[k]
		if len(m) > 0 {
			writeKey(&b, 4, k, m)
		}
	}
	if c.Steps != nil {
		writeKey(&b, 4, "steps", c.Steps)
	}
	return b.String()
}

// CaseFile is a whole case file holding c (for the canonical suite, a
// file of canonical JSON vectors, cases.ParseCanonical).
func CaseFile(c cases.Case) string {
	if c.Suite() == cases.SuiteCanonical {
		return fmt.Sprintf("{\"spec_version\": %d, \"cases\": [\n%s]}\n", cases.SpecVersion, canonicalEntry(c))
	}
	return fmt.Sprintf("spec_version: %d\ncases:\n%s", cases.SpecVersion, CaseYAML(c))
}

const flowWidth = 100

func writeKey(b *strings.Builder, indent int, key string, v any) {
	pad := strings.Repeat(" ", indent)
	if f, ok := flow(v); ok && indent+len(key)+2+len(f) <= flowWidth {
		b.WriteString(pad + scalar(key) + ": " + f + "\n")
		return
	}
	switch x := v.(type) {
	case map[string]any:
		b.WriteString(pad + scalar(key) + ":\n")
		for _, k := range keys(x) {
			writeKey(b, indent+2, k, x[k])
		}
	case []any:
		b.WriteString(pad + scalar(key) + ":\n")
		for _, e := range x {
			writeItem(b, indent+2, e)
		}
	default:
		f, _ := flow(v)
		b.WriteString(pad + scalar(key) + ": " + f + "\n")
	}
}

func writeItem(b *strings.Builder, indent int, v any) {
	pad := strings.Repeat(" ", indent)
	if f, ok := flow(v); ok && indent+2+len(f) <= flowWidth {
		b.WriteString(pad + "- " + f + "\n")
		return
	}
	switch x := v.(type) {
	case map[string]any:
		// "- " then the first key on the same line, the others below it.
		var sub strings.Builder
		for _, k := range keys(x) {
			writeKey(&sub, indent+2, k, x[k])
		}
		s := sub.String()
		b.WriteString(pad + "- " + s[indent+2:])
	case []any:
		b.WriteString(pad + "-\n")
		for _, e := range x {
			writeItem(b, indent+2, e)
		}
	default:
		f, _ := flow(v)
		b.WriteString(pad + "- " + f + "\n")
	}
}

// flow writes v on one line; false when v is too long for one.
func flow(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "null", true
	case bool:
		return strconv.FormatBool(x), true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.FormatInt(int64(x), 10), true
		}
		return strconv.FormatFloat(x, 'g', -1, 64), true
	case string:
		s := scalar(x)
		return s, len(s) <= flowWidth
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			f, ok := flow(e)
			if !ok {
				return "", false
			}
			parts = append(parts, f)
		}
		s := "[" + strings.Join(parts, ", ") + "]"
		return s, len(s) <= flowWidth
	case map[string]any:
		parts := make([]string, 0, len(x))
		for _, k := range keys(x) {
			f, ok := flow(x[k])
			if !ok {
				return "", false
			}
			parts = append(parts, scalar(k)+": "+f)
		}
		s := "{" + strings.Join(parts, ", ") + "}"
		return s, len(s) <= flowWidth
	}
	return fmt.Sprintf("%q", fmt.Sprint(v)), true
}

// keys orders a mapping's keys: the usual leading keys of case documents
// and commands first, then the rest bytewise.
func keys(m map[string]any) []string {
	rank := map[string]int{"id": 0, "type": 1, "page": 2, "parent": 3, "rank": 4, "kind": 5, "event": 0, "expect": 1}
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		ri, iok := rank[ks[i]]
		rj, jok := rank[ks[j]]
		switch {
		case iok && jok:
			return ri < rj
		case iok != jok:
			return iok
		}
		return ks[i] < ks[j]
	})
	return ks
}

// plainWord is a string YAML reads back as that string when written bare.
var plainWord = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_./-]*$`)

// yamlWords are bare words YAML would read as something else.
var yamlWords = map[string]bool{"null": true, "Null": true, "NULL": true, "true": true, "True": true,
	"TRUE": true, "false": true, "False": true, "FALSE": true, "y": true, "Y": true, "n": true, "N": true,
	"yes": true, "Yes": true, "YES": true, "no": true, "No": true, "NO": true, "on": true, "On": true,
	"ON": true, "off": true, "Off": true, "OFF": true, ".inf": true, ".nan": true}

// scalar writes a string bare when that is unambiguous, else
// double-quoted with every character outside printable ASCII escaped.
func scalar(s string) string {
	if plainWord.MatchString(s) && !yamlWords[s] {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r < 0x10000:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
