package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/subspace/kbkit/speckit/adapters"
)

// Expectation statuses.
const (
	ExpectFail  = "fail"
	ExpectSkip  = "skip"
	ExpectFlaky = "known_flaky" // may fail or pass; neither fails the run
)

// Expectation is one entry of an expectations file.
type Expectation struct {
	// ID is a case id or a path.Match glob over case ids.
	ID     string `json:"id" yaml:"id"`
	Status string `json:"status" yaml:"status"` // "fail", "skip" or "known_flaky"
	Reason string `json:"reason" yaml:"reason"`
	Issue  string `json:"issue,omitempty" yaml:"issue,omitempty"`
	// Client and Server narrow an entry of `kbkit conformance run` to the
	// runs that drive this --client command line, or run against this
	// server (a --broken-server variant or the --server URL).
	Client string `json:"client,omitempty" yaml:"client,omitempty"`
	Server string `json:"server,omitempty" yaml:"server,omitempty"`
	// File and Line are the entry's file and line in it (0 if unknown).
	File  string `json:"-" yaml:"-"`
	Line  int    `json:"-" yaml:"-"`
	index int
}

// Expectations is a parsed expectations file (spec/EXPECTATIONS.md).
type Expectations struct {
	Path    string
	Entries []Expectation
	used    []bool
}

// ErrExpectations wraps every problem with an expectations file.
var ErrExpectations = errors.New("report: bad expectations file")

// LoadExpectations reads and validates an expectations file.
func LoadExpectations(name string) (*Expectations, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return ParseExpectations(name, data)
}

var (
	schemaOnce sync.Once
	schema     *jsonschema.Schema
	schemaErr  error
)

func expectationsSchema() (*jsonschema.Schema, error) {
	schemaOnce.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(adapters.ExpectationsSchema))
		if err != nil {
			schemaErr = err
			return
		}
		c := jsonschema.NewCompiler()
		const url = "expectations.schema.json"
		if err := c.AddResource(url, doc); err != nil {
			schemaErr = err
			return
		}
		schema, schemaErr = c.Compile(url)
	})
	return schema, schemaErr
}

// ParseExpectations parses an expectations file (YAML or JSON) and
// validates it against expectations.schema.json; globs must be valid.
func ParseExpectations(name string, data []byte) (*Expectations, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, yamlError(name, data, err)
	}
	var v any
	if err := root.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrExpectations, name, err)
	}
	// Through JSON, so the validator sees JSON values only.
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrExpectations, name, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrExpectations, name, err)
	}
	sch, err := expectationsSchema()
	if err != nil {
		return nil, fmt.Errorf("report: expectations schema: %v", err)
	}
	if err := sch.Validate(inst); err != nil {
		return nil, schemaError(name, &root, err)
	}
	var file struct {
		Expectations []Expectation `json:"expectations"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrExpectations, name, err)
	}
	for i, e := range file.Expectations {
		line := nodeLine(&root, []string{"expectations", fmt.Sprint(i)})
		if _, err := path.Match(e.ID, ""); err != nil {
			return nil, fmt.Errorf("%w: %s:%d: expectations[%d]: bad glob %q: %v", ErrExpectations, name, line, i, e.ID, err)
		}
		file.Expectations[i].File, file.Expectations[i].Line, file.Expectations[i].index = name, line, i
	}
	return &Expectations{Path: name, Entries: file.Expectations, used: make([]bool, len(file.Expectations))}, nil
}

// Match returns the first entry whose id or glob matches the case id, or
// nil. A nil *Expectations matches nothing.
func (x *Expectations) Match(id string) *Expectation {
	if x == nil {
		return nil
	}
	for i := range x.Entries {
		e := &x.Entries[i]
		if ok, _ := path.Match(e.ID, id); ok || e.ID == id {
			x.used[i] = true
			return e
		}
	}
	return nil
}

// Unused returns the entries that matched no case so far (stale entries,
// or cases filtered out of the run).
func (x *Expectations) Unused() []Expectation {
	if x == nil {
		return nil
	}
	var out []Expectation
	for i, e := range x.Entries {
		if !x.used[i] {
			out = append(out, e)
		}
	}
	return out
}
