package report

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

// SchemaPath is where the expectations schema lives in this repository;
// `kbkit spec export DIR` writes it to DIR/schema/expectations.schema.json.
const SchemaPath = "speckit/adapters/expectations.schema.json"

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// yamlError words a YAML syntax error as NAME:LINE: message, at the line
// of the problem. yaml.v3 reports the line where the enclosing construct
// began (an indentation error on line 5 of a list that starts on line 2
// reads "line 2"), so the line is found again: the first prefix of whole
// lines that fails with the same message is the one that holds the problem.
func yamlError(name string, data []byte, err error) error {
	msg := err.Error()
	m := yamlLine.FindStringSubmatch(msg)
	if m == nil {
		return fmt.Errorf("%w: %s: %v", ErrExpectations, name, err)
	}
	what := msg[len(m[0]):]
	line, _ := strconv.Atoi(m[1])
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) <= 5000 {
		for k := 1; k <= len(lines); k++ {
			var v any
			perr := yaml.Unmarshal(bytes.Join(lines[:k], nil), &v)
			if perr == nil {
				continue
			}
			if pm := yamlLine.FindStringSubmatch(perr.Error()); pm != nil && perr.Error()[len(pm[0]):] == what {
				line = k
				break
			}
		}
	}
	return fmt.Errorf("%w: %s:%d: %s", ErrExpectations, name, line, what)
}

// schemaError words a schema violation as one line per problem, each at
// NAME:LINE with the JSON pointer of the value, and names the schema by
// the path it has in this repository and in an export.
func schemaError(name string, root *yaml.Node, err error) error {
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return fmt.Errorf("%w: %s: %v", ErrExpectations, name, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s does not match the expectations schema (%s; kbkit spec export DIR writes it to DIR/schema/expectations.schema.json):", name, SchemaPath)
	var leaves func(e *jsonschema.ValidationError)
	leaves = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				leaves(c)
			}
			return
		}
		ptr := "/" + strings.Join(e.InstanceLocation, "/")
		fmt.Fprintf(&b, "\n  %s:%d: at %s: %s", name, nodeLine(root, e.InstanceLocation), ptr, leafMessage(e))
	}
	leaves(verr)
	return fmt.Errorf("%w: %s", ErrExpectations, b.String())
}

// leafMessage is the validator's own wording of one leaf error.
func leafMessage(e *jsonschema.ValidationError) string {
	if out := e.BasicOutput(); out.Error != nil {
		return out.Error.String()
	}
	return "invalid"
}

// nodeLine is the line of the YAML node at a JSON pointer's tokens (the
// nearest existing ancestor's, for a missing property).
func nodeLine(n *yaml.Node, path []string) int {
	if n == nil {
		return 0
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for _, tok := range path {
		next := (*yaml.Node)(nil)
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == tok {
					next = n.Content[i+1]
					if next.Kind == yaml.ScalarNode {
						next = n.Content[i] // a scalar's key is on its line
					}
					break
				}
			}
		case yaml.SequenceNode:
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(n.Content) {
				next = n.Content[i]
			}
		}
		if next == nil {
			break
		}
		n = next
	}
	return n.Line
}

// isGlob says whether an expectation id is a pattern rather than one id.
func isGlob(id string) bool { return strings.ContainsAny(id, `*?[\`) }

// ShadowedBy returns the earlier entry that matches every case e would
// (an exact id that an earlier glob covers), or nil: Match never reaches
// e for such a case, so e is reported unused even when its case ran.
func (x *Expectations) ShadowedBy(e Expectation) *Expectation {
	if x == nil || isGlob(e.ID) {
		return nil
	}
	for j := 0; j < e.index && j < len(x.Entries); j++ {
		if ok, _ := path.Match(x.Entries[j].ID, e.ID); ok {
			return &x.Entries[j]
		}
	}
	return nil
}
