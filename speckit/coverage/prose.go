package coverage

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
)

// Levels of a requirement: the strongest key word of its sentence.
const (
	MUST   = "MUST"
	SHOULD = "SHOULD"
)

// Requirement is one normative sentence or rule-table row of the spec's
// prose, named by the tag [req: ID] written in it.
type Requirement struct {
	ID    string `json:"id"`
	Level string `json:"level"` // MUST or SHOULD
	File  string `json:"file"`  // relative to the spec directory
	Line  int    `json:"line"`  // the line of the tag
	Text  string `json:"-"`     // the sentence or row, tags included
}

var (
	// tagRE is a requirement tag; an id is dotted kebab-case words.
	tagRE = regexp.MustCompile(`\[req: ([a-z0-9]+(?:[.-][a-z0-9]+)*)\]`)
	// looseTagRE finds what was meant as a tag but is not one.
	looseTagRE = regexp.MustCompile(`\[req:[^\]]*\]`)
	// mustRE and shouldRE are the key words that make a sentence
	// normative, in either case (spec/README.md, "Requirement ids").
	mustRE   = regexp.MustCompile(`(?i)\b(must|never|required)\b`)
	shouldRE = regexp.MustCompile(`(?i)\bshould\b`)
	codeRE   = regexp.MustCompile("`[^`]*`")
	// listRE opens a list item: "- ", "* ", "1. ".
	headingRE = regexp.MustCompile(`^#{1,6}( |$)`)
	listRE    = regexp.MustCompile(`^\s*(?:[-*]|\d+\.)\s+`)
	// endRE ends a sentence: a full stop, question or exclamation mark
	// before white space, not after e.g., i.e., etc. or vs.
	endRE = regexp.MustCompile(`[.?!]\s+`)
	abbrs = []string{"e.g", "i.e", "etc", "vs"}
)

// RuleTables are the header rows of the tables each row of which is a
// requirement (a MUST), whether or not it holds a key word.
var RuleTables = []string{
	"| check | code |", // README.md 2.1, planner.md
	"| type | payload | semantics | rejections (in check order) | inverse |", // README.md 2.2
	"| code | meaning |",                                                 // README.md 2.3
	"| event | effect | actions |",                                       // window.md
	"| `data.code` | `code` | HTTP | when |",                             // PROTOCOL.md 6
	"| limit | `kb.limits` field | reference default | flag | past it |", // PROTOCOL.md 8
	"| checker | the client must |",                                      // ADAPTER.md 7
}

// Problem is a place in the prose that breaks the tagging rule.
type Problem struct {
	File string
	Line int
	Msg  string
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg) }

// unit is a sentence or a table row, with the line it starts on.
type unit struct {
	text string
	line int
	row  bool // a row of a rule table
}

// ReadProse reads the requirements of every *.md file at the top of fsys
// and the problems of its tagging: a normative sentence or rule-table row
// without a tag, a malformed tag, an id tagged twice.
func ReadProse(fsys fs.FS) ([]Requirement, []Problem, error) {
	names, err := fs.Glob(fsys, "*.md")
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(names)
	var reqs []Requirement
	var probs []Problem
	seen := map[string]Requirement{}
	for _, name := range names {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, nil, err
		}
		rs, ps := parseProse(path.Base(name), string(data))
		probs = append(probs, ps...)
		for _, r := range rs {
			if first, ok := seen[r.ID]; ok {
				probs = append(probs, Problem{r.File, r.Line, fmt.Sprintf("[req: %s] is tagged twice (first at %s:%d)", r.ID, first.File, first.Line)})
				continue
			}
			seen[r.ID] = r
			reqs = append(reqs, r)
		}
	}
	return reqs, probs, nil
}

// parseProse reads one markdown file.
func parseProse(file, text string) ([]Requirement, []Problem) {
	var reqs []Requirement
	var probs []Problem
	for _, u := range units(text) {
		masked := blankCode(u.text)
		for _, m := range looseTagRE.FindAllString(masked, -1) {
			if !tagRE.MatchString(m) {
				probs = append(probs, Problem{file, u.line, fmt.Sprintf("%q is not a tag [req: dotted.kebab-id]", m)})
			}
		}
		words := tagRE.ReplaceAllString(masked, "") // an id's words are no key words
		level := ""
		switch {
		case strings.Contains(u.text, "used as in RFC 2119"): // the sentence that defines the key words
		case u.row || mustRE.MatchString(words):
			level = MUST
		case shouldRE.MatchString(words):
			level = SHOULD
		}
		tags := tagRE.FindAllStringSubmatch(masked, -1) // a tag in a code span is an example, not a tag
		if level == "" {
			if len(tags) > 0 {
				probs = append(probs, Problem{file, u.line, fmt.Sprintf("[req: %s] tags a sentence with no key word (must, must not, should, never, required): %s", tags[0][1], clip(u.text))})
			}
			continue
		}
		if len(tags) == 0 {
			probs = append(probs, Problem{file, u.line, "a normative " + kindOf(u) + " has no [req: id] tag: " + clip(u.text)})
			continue
		}
		if len(tags) > 1 {
			probs = append(probs, Problem{file, u.line, "one " + kindOf(u) + " carries several tags: " + clip(u.text)})
		}
		reqs = append(reqs, Requirement{ID: tags[0][1], Level: level, File: file, Line: u.line + lineOf(masked, tags[0][0]), Text: u.text})
	}
	return reqs, probs
}

func kindOf(u unit) string {
	if u.row {
		return "rule-table row"
	}
	return "sentence"
}

func lineOf(text, sub string) int { return strings.Count(text[:strings.Index(text, sub)], "\n") }

func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 100 {
		s = s[:100] + "..."
	}
	return s
}

// units splits markdown into sentences and table rows. Headings and
// fenced code are skipped; a paragraph or list item is split into
// sentences; a table row is one unit.
func units(text string) []unit {
	var out []unit
	lines := strings.Split(text, "\n")
	var block []string
	start := 0
	flush := func() {
		if len(block) > 0 {
			out = append(out, sentences(strings.Join(block, "\n"), start)...)
		}
		block = nil
	}
	fenced, rule := false, false
	for i, l := range lines {
		n := i + 1
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "```"):
			flush()
			fenced = !fenced
		case fenced:
		case t == "" || headingRE.MatchString(t):
			flush()
			rule = false
		case strings.HasPrefix(t, "|"):
			flush()
			switch {
			case i+1 < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "|---"):
				rule = isRuleHeader(t) // a table's header row
			case strings.HasPrefix(t, "|---"):
			default:
				out = append(out, unit{text: t, line: n, row: rule})
			}
		case listRE.MatchString(l):
			flush()
			block, start = []string{listRE.ReplaceAllString(l, "")}, n
		default:
			if block == nil {
				start = n
			}
			block = append(block, t)
		}
	}
	flush()
	return out
}

func isRuleHeader(t string) bool {
	for _, h := range RuleTables {
		if t == h {
			return true
		}
	}
	return false
}

// sentences splits a block at sentence ends outside code spans; tags
// right after a sentence's end belong to that sentence.
func sentences(block string, line int) []unit {
	masked := blankCode(block)
	var out []unit
	from := 0
	emit := func(to int) {
		s := block[from:to]
		if strings.TrimSpace(s) != "" {
			out = append(out, unit{text: strings.TrimSpace(s), line: line + strings.Count(block[:from], "\n") + leadingNewlines(s)})
		}
		from = to
	}
	for _, m := range endRE.FindAllStringIndex(masked, -1) {
		if m[0] < from || isAbbr(masked[:m[0]]) {
			continue
		}
		end := m[1]
		for {
			loc := tagRE.FindStringIndex(masked[end:])
			if loc == nil || loc[0] != 0 {
				break
			}
			end += loc[1]
			for end < len(block) && (block[end] == ' ' || block[end] == '\n') {
				end++
			}
		}
		emit(end)
	}
	emit(len(block))
	return out
}

func leadingNewlines(s string) int {
	return strings.Count(s[:len(s)-len(strings.TrimLeft(s, " \n"))], "\n")
}

func isAbbr(before string) bool {
	for _, a := range abbrs {
		if strings.HasSuffix(before, a) && (len(before) == len(a) || !isLetter(before[len(before)-len(a)-1])) {
			return true
		}
	}
	return false
}

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

// blankCode blanks out the code spans of s byte for byte, keeping its length
// (so that an index of the mask is one of s) and its line breaks.
func blankCode(s string) string {
	return codeRE.ReplaceAllStringFunc(s, func(span string) string {
		b := []byte(span)
		for i := range b {
			if b[i] != '\n' {
				b[i] = 'x'
			}
		}
		return string(b)
	})
}
