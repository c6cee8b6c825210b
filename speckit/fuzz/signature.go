package fuzz

import (
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/speckit/cases"
	"github.com/subspace/kbkit/speckit/report"
)

// A difference's signatures name it by what it is, not by its input: one
// per part of the reply that differs, so that an expectations file can
// silence one tracked bug and no other (spec/EXPECTATIONS.md):
//
//	<command type>/fuzz:<field>          edit-text/fuzz:doc
//	tokenizer/fuzz:<text|formula>:<field> tokenizer/fuzz:formula:deps
//	window/fuzz:<step kind>:<field>      window/fuzz:echo:pending
//	planner/fuzz:<command type>:<field>  planner/fuzz:merge-page:effects
//	canonical/fuzz:<doc|value>:<field>   canonical/fuzz:value:canonical
//
// The field is a key of the case's expected side (doc, inverse, index,
// rejected; refs, label, deps; seq, pending, actions, rendered, server;
// effects, pages; canonical), "error" when the implementation errored (crash,
// timeout, protocol error), "states" when a window script got another
// number of states, "other" for anything else. A window's step kind is
// the event of the first step that differs ("script" for errors and
// state counts). The area part is the first path segment of the fuzzed
// case's id, so globs such as "move-node/*" cover both.

// Signature fields by suite, for SignatureSpace.
var (
	commandFields   = []string{"doc", "inverse", "index", "rejected", "error", "other"}
	tokenizerFields = []string{"refs", "label", "deps", "error", "other"}
	windowFields    = []string{"seq", "pending", "actions", "rendered", "server", "states", "error", "other"}
	windowKinds     = []string{"local", "echo", "reject", "snapshot", "undo", "redo", "script"}
	plannerFields   = []string{"effects", "pages", "rejected", "error", "other"}
	canonicalFields = []string{"canonical", "error", "other"}
)

// stateCount is a window diff's line on the number of states.
var stateCount = regexp.MustCompile(`^[-+] \d+ states( \(one per step\))?$`)

// Signatures are the signatures of the outcome o of the fuzzed case c
// (one that failed or errored), sorted.
func Signatures(c cases.Case, o cases.Outcome) []string {
	fields, step := diffFields(o)
	var prefix string
	switch c.Suite() {
	case cases.SuiteCommands:
		prefix = commandArea(c.When["cmd"]) + "/fuzz:"
	case cases.SuiteTokenizer:
		what := "text"
		if _, ok := c.When["formula"]; ok {
			what = "formula"
		}
		prefix = "tokenizer/fuzz:" + what + ":"
	case cases.SuiteWindow:
		prefix = "window/fuzz:" + stepKind(c, step) + ":"
	case cases.SuiteCanonical:
		prefix = "canonical/fuzz:" + canonicalWhat(c) + ":"
	default:
		prefix = "planner/fuzz:" + commandArea(c.When["cmd"]) + ":"
	}
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = prefix + f
	}
	return out
}

// diffFields are the fields an outcome's diff has sections for, sorted,
// and the number (from 1) of the first window step that differs (0: none).
func diffFields(o cases.Outcome) ([]string, int) {
	if o.Status == cases.Error {
		return []string{"error"}, 0
	}
	seen := map[string]bool{}
	first := 0
	for _, l := range strings.Split(o.Diff, "\n") {
		var f string
		switch {
		case strings.HasPrefix(l, "- rejected"), strings.HasPrefix(l, "+ rejected"),
			strings.HasPrefix(l, "- accepted"), strings.HasPrefix(l, "+ accepted"):
			f = "rejected"
		case strings.HasPrefix(l, "+ invalid document"):
			f = "doc"
		case stateCount.MatchString(l):
			f = "states"
		case strings.HasPrefix(l, "step ") && strings.HasSuffix(l, ":"):
			// "step N key:" (window.go's stepHead): the first step only.
			num, key, _ := strings.Cut(strings.TrimSuffix(l[len("step "):], ":"), " ")
			n, _ := strconv.Atoi(num)
			if first != 0 && n != first {
				continue
			}
			first, f = n, key
		case strings.HasPrefix(l, "pages.") && (strings.HasSuffix(l, ":") || strings.HasSuffix(l, "not touched by the plan")):
			f = "pages"
		case l != "" && l[0] != ' ' && l[0] != '-' && l[0] != '+' && strings.HasSuffix(l, ":"):
			f = strings.TrimSuffix(l, ":")
		default:
			continue
		}
		seen[f] = true
	}
	if len(seen) == 0 {
		seen["other"] = true
	}
	out := make([]string, 0, len(seen))
	for f := range seen {
		out = append(out, f)
	}
	sort.Strings(out)
	return out, first
}

// stepKind is the event kind of the window script's step n (from 1):
// "script" when there is no such step.
func stepKind(c cases.Case, n int) string {
	if n < 1 || n > len(c.Steps) {
		return "script"
	}
	step, _ := c.Steps[n-1].(map[string]any)
	ev, _ := step["event"].(map[string]any)
	if len(ev) == 1 {
		for k := range ev {
			return k
		}
	}
	if raw, ok := step["event"].(json.RawMessage); ok {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) == nil && len(m) == 1 {
			for k := range m {
				return k
			}
		}
	}
	return "script"
}

// SignatureSpace is every signature a difference can have, and a
// representative of each kind of fuzzed case id (<area>/fuzz-...): an
// expectations entry that matches none of them names nothing spec fuzz
// can report.
func SignatureSpace() []string {
	var out []string
	for _, t := range append(append([]string{}, kbcore.Types...), "unknown-type") {
		for _, f := range commandFields {
			out = append(out, t+"/fuzz:"+f)
		}
		for _, f := range plannerFields {
			out = append(out, "planner/fuzz:"+t+":"+f)
		}
		out = append(out, t+"/fuzz-00000000", "planner/fuzz-"+t+"-00000000")
	}
	for _, what := range []string{"text", "formula"} {
		for _, f := range tokenizerFields {
			out = append(out, "tokenizer/fuzz:"+what+":"+f)
		}
		out = append(out, "tokenizer/fuzz-"+what+"-00000000")
	}
	for _, k := range windowKinds {
		for _, f := range windowFields {
			out = append(out, "window/fuzz:"+k+":"+f)
		}
	}
	for _, what := range []string{"doc", "value"} {
		for _, f := range canonicalFields {
			out = append(out, "canonical/fuzz:"+what+":"+f)
		}
		out = append(out, "canonical/fuzz-"+what+"-00000000")
	}
	return append(out, "window/fuzz-00000000")
}

// IsFuzzEntry reports whether an expectations entry is about fuzzed
// differences alone (its id holds "/fuzz"): spec fuzz judges such an
// entry stale when it silenced nothing, and spec run leaves it alone.
func IsFuzzEntry(e report.Expectation) bool { return strings.Contains(e.ID, "/fuzz") }

// SuiteOf is the suite an entry's id is about, by its first path segment
// ("" for a glob there).
func SuiteOf(id string) string {
	head, _, _ := strings.Cut(id, "/")
	switch {
	case strings.ContainsAny(head, `*?[\`):
		return ""
	case head == cases.SuiteTokenizer, head == cases.SuiteWindow, head == cases.SuitePlanner, head == cases.SuiteCanonical:
		return head
	}
	return cases.SuiteCommands
}
