package cases

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/subspace/kbkit/internal/version"
	"github.com/subspace/kbkit/spec"

	"gopkg.in/yaml.v3"
)

// SpecVersion is the spec_version of the built-in spec (version.Spec):
// the case files kbkit writes declare it.
const SpecVersion = version.Spec

// MinSpecVersion is the oldest spec_version whose case files this package
// reads. The case-file format is the same from 1 to SpecVersion (what
// changed between them is the rules, CHANGELOG.md), so a file of any of
// them runs; a newer one is refused, naming the kbkit that reads it.
const MinSpecVersion = 1

// Suites.
const (
	SuiteCommands  = "commands"
	SuiteTokenizer = "tokenizer"
)

// Suites are the suites of cases, in the order the runner takes them.
var Suites = []string{SuiteCommands, SuiteTokenizer, SuiteWindow, SuitePlanner, SuiteCanonical}

// DefaultPage is the page record of a case document that omits `page`.
var DefaultPage = map[string]any{
	"id": "00000000-0000-0000-0000-000000000001", "title": "Test page",
	"aliases": []any{}, "dir": "", "merged_into": nil,
}

// Case is one case of a case file, as plain JSON-like values.
type Case struct {
	ID          string
	Description string
	File        string
	Line        int
	Given       map[string]any
	When        map[string]any
	Then        map[string]any
	// Steps is a window script (SuiteWindow): a list of {event, expect}.
	Steps []any
}

// Suite is derived from the case's shape; "" when no suite matches.
func (c Case) Suite() string {
	switch {
	case c.Steps != nil:
		return SuiteWindow
	case c.Given["pages"] != nil:
		return SuitePlanner
	case c.When["cmd"] != nil:
		return SuiteCommands
	case c.When["text"] != nil || c.When["formula"] != nil:
		return SuiteTokenizer
	case c.When["doc"] != nil || c.When["value"] != nil:
		return SuiteCanonical
	}
	return ""
}

// File is one parsed case file.
type File struct {
	Path  string
	Cases []Case
}

// ErrFormat wraps every problem with a case file's format.
var ErrFormat = errors.New("cases: bad case file")

// Parse reads one case file.
func Parse(name string, data []byte) (File, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return File{}, fmt.Errorf("%w: %s: %v", ErrFormat, name, err)
	}
	var head struct {
		SpecVersion int         `yaml:"spec_version"`
		Cases       []yaml.Node `yaml:"cases"`
	}
	if err := root.Decode(&head); err != nil {
		return File{}, fmt.Errorf("%w: %s: %v", ErrFormat, name, err)
	}
	if err := checkSpecVersion(head.SpecVersion); err != nil {
		return File{}, fmt.Errorf("%w: %s: %v", ErrFormat, name, err)
	}
	f := File{Path: name}
	for i := range head.Cases {
		n := &head.Cases[i]
		var raw struct {
			ID          string         `yaml:"id"`
			Description string         `yaml:"description"`
			Given       map[string]any `yaml:"given"`
			When        map[string]any `yaml:"when"`
			Then        map[string]any `yaml:"then"`
			Steps       any            `yaml:"steps"`
		}
		if err := n.Decode(&raw); err != nil {
			return File{}, fmt.Errorf("%w: %s:%d: %v", ErrFormat, name, n.Line, err)
		}
		if raw.ID == "" {
			return File{}, fmt.Errorf("%w: %s:%d: a case has no id", ErrFormat, name, n.Line)
		}
		c := Case{ID: raw.ID, Description: raw.Description, File: name, Line: n.Line}
		var err error
		if c.Given, err = jsonish(raw.Given); err == nil {
			if c.When, err = jsonish(raw.When); err == nil {
				c.Then, err = jsonish(raw.Then)
			}
		}
		if err == nil && raw.Steps != nil {
			var wrap map[string]any
			if wrap, err = jsonish(map[string]any{"steps": raw.Steps}); err == nil {
				var ok bool
				if c.Steps, ok = wrap["steps"].([]any); !ok {
					err = fmt.Errorf("steps must be a list")
				}
			}
		}
		if err != nil {
			return File{}, fmt.Errorf("%w: %s:%d: %v", ErrFormat, name, n.Line, err)
		}
		f.Cases = append(f.Cases, c)
	}
	return f, nil
}

// checkSpecVersion says what is wrong with a case file's spec_version.
func checkSpecVersion(v int) error {
	switch {
	case v == 0:
		return fmt.Errorf("no spec_version (a case file begins with spec_version: %d; this kbkit reads %d to %d)", SpecVersion, MinSpecVersion, SpecVersion)
	case v < MinSpecVersion:
		return fmt.Errorf("spec_version %d is not a version (this kbkit reads %d to %d)", v, MinSpecVersion, SpecVersion)
	case v > SpecVersion:
		return fmt.Errorf("spec_version %d is newer than this kbkit knows (kbkit %s reads %d to %d): run it with a newer kbkit (CHANGELOG.md)", v, version.Kit, MinSpecVersion, SpecVersion)
	}
	return nil
}

// jsonish turns decoded YAML into the values encoding/json would produce, so
// numbers compare as float64 on both sides.
func jsonish(m map[string]any) (map[string]any, error) {
	if m == nil {
		return map[string]any{}, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	err = json.Unmarshal(b, &out)
	return out, err
}

// CanonicalFile is the name of a file of canonical JSON vectors
// (ParseCanonical) that LoadFS reads beside the YAML case files.
const CanonicalFile = "canonical.json"

// LoadFS reads every *.yaml case file and every canonical.json under
// root in fsys, in path order.
func LoadFS(fsys fs.FS, root string) ([]File, error) {
	var files []File
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		canonical := path.Base(p) == CanonicalFile
		if d.IsDir() || (!canonical && path.Ext(p) != ".yaml" && path.Ext(p) != ".yml") {
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		if canonical {
			f, err := ParseCanonical(p, data)
			if err != nil {
				return err
			}
			files = append(files, f)
			return nil
		}
		if !bytes.Contains(data, []byte("spec_version")) {
			return nil // not a case file (e.g. an expectations file)
		}
		f, err := Parse(p, data)
		if err != nil {
			return err
		}
		files = append(files, f)
		return nil
	})
	return files, err
}

// LoadPaths reads files and directories from disk.
func LoadPaths(paths []string) ([]File, error) {
	var files []File
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if st.IsDir() {
			fsFiles, err := LoadFS(os.DirFS(p), ".")
			if err != nil {
				return nil, err
			}
			for i := range fsFiles {
				fsFiles[i].Path = filepath.Join(p, fsFiles[i].Path)
				for j := range fsFiles[i].Cases {
					fsFiles[i].Cases[j].File = fsFiles[i].Path
				}
			}
			files = append(files, fsFiles...)
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		parse := Parse
		if path.Ext(p) == ".json" {
			parse = ParseCanonical // a file of canonical JSON vectors
		}
		f, err := parse(p, data)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// All flattens files into their cases and checks that ids are unique.
func All(files []File) ([]Case, error) {
	seen := map[string]string{}
	var out []Case
	for _, f := range files {
		for _, c := range f.Cases {
			where := fmt.Sprintf("%s:%d", c.File, c.Line)
			if prev, dup := seen[c.ID]; dup {
				return nil, fmt.Errorf("%w: case id %q at %s is also at %s", ErrFormat, c.ID, where, prev)
			}
			seen[c.ID] = where
			out = append(out, c)
		}
	}
	return out, nil
}

// ---- documents in cases ----

// ExpandDoc fills a case document's defaults: page when `page` is omitted
// (a partial page record is completed from page), `parent: null` and
// `kind: text` in nodes, and returns JSON.
func ExpandDoc(doc any, page map[string]any) ([]byte, error) {
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("doc must be a mapping, got %T", doc)
	}
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	if _, ok := out["page"]; !ok {
		out["page"] = page
	} else if p, ok := out["page"].(map[string]any); ok {
		full := map[string]any{}
		for k, v := range page {
			full[k] = v
		}
		for k, v := range p {
			full[k] = v
		}
		out["page"] = full
	}
	if out["nodes"] == nil {
		out["nodes"] = []any{}
	}
	nodes, ok := out["nodes"].([]any)
	if !ok {
		return nil, fmt.Errorf("doc.nodes must be a list")
	}
	expanded := make([]any, len(nodes))
	for i, n := range nodes {
		nm, ok := n.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("doc.nodes[%d] must be a mapping", i)
		}
		e := map[string]any{"parent": nil, "kind": "text", "text": ""}
		for k, v := range nm {
			e[k] = v
		}
		expanded[i] = e
	}
	out["nodes"] = expanded
	return json.Marshal(out)
}

// ---- comparison ----

// Canon re-encodes a JSON value with sorted keys and indentation, so two
// equal values print identically and a line diff reads well.
func Canon(v any) string {
	if b, ok := v.([]byte); ok {
		var x any
		if err := json.Unmarshal(b, &x); err != nil {
			return string(b)
		}
		v = x
	}
	if r, ok := v.(json.RawMessage); ok {
		var x any
		if err := json.Unmarshal(r, &x); err != nil {
			return string(r)
		}
		v = x
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}

// Diff is a minimal line diff of two texts ("-" want, "+" got).
func Diff(want, got string) string {
	a, b := strings.Split(want, "\n"), strings.Split(got, "\n")
	// Longest common subsequence by dynamic programming; case outputs are small.
	if len(a)*len(b) > 4_000_000 {
		return "- " + want + "\n+ " + got
	}
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var sb strings.Builder
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			sb.WriteString("  " + a[i] + "\n")
			i++
			j++
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			sb.WriteString("- " + a[i] + "\n")
			i++
		default:
			sb.WriteString("+ " + b[j] + "\n")
			j++
		}
	}
	return sb.String()
}

// sortedKeys returns a map's keys in order.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Open returns the cases of the case files at paths (files or
// directories); with none, the cases of kbkit's built-in spec (spec.FS).
func Open(paths ...string) ([]Case, error) {
	var files []File
	var err error
	if len(paths) == 0 {
		files, err = LoadFS(spec.FS, ".")
	} else {
		files, err = LoadPaths(paths)
	}
	if err != nil {
		return nil, err
	}
	return All(files)
}

// ForTest returns the built-in spec's cases, failing tb when they do not
// load.
func ForTest(tb testing.TB) []Case {
	tb.Helper()
	all, err := Open()
	if err != nil {
		tb.Fatalf("the built-in spec's cases: %v", err)
	}
	return all
}
