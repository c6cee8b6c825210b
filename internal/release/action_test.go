package release

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

// root is the repository's root, where action.yml is.
const root = "../.."

// jsonOf reads YAML as the JSON value a schema validates.
func jsonOf(t *testing.T, y []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(y, &v); err != nil {
		t.Fatalf("yaml: %v", err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json: %v", err)
	}
	j, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// actionSchemas are the Actions metadata schemas action.yml is held to:
// the hand-written one and SchemaStore's github-action.json as published
// (testdata/README.md names its source and licence).
var actionSchemas = []string{"action.schema.json", "schemastore-github-action.json"}

func actionSchema(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(name, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// action.yml is valid action metadata under both schemas, and each
// refuses what the metadata syntax refuses (so that its passing means
// something).
func TestActionMetadataValidates(t *testing.T) {
	y, err := os.ReadFile(filepath.Join(root, "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var schemas []*jsonschema.Schema
	for _, name := range actionSchemas {
		s := actionSchema(t, name)
		if err := s.Validate(jsonOf(t, y)); err != nil {
			t.Errorf("action.yml against %s: %v", name, err)
		}
		schemas = append(schemas, s)
	}
	for _, tc := range []struct {
		name, from, to string
	}{
		{"no description", "\ndescription: Run kbkit", "\nsummary: Run kbkit"},
		{"an unknown runner", "using: composite", "using: node12"},
		{"a run step without shell", "      shell: bash\n", ""},
		{"an input without description", "  suites:\n    description:", "  suites:\n    summary:"},
		{"a composite output without value", "    value: ${{ steps.kbkit.outputs.results }}\n", ""},
		{"an unknown top-level key", "\nauthor: subspace", "\nauthors: subspace"},
	} {
		bad := strings.Replace(string(y), tc.from, tc.to, 1)
		if bad == string(y) {
			t.Errorf("%s: action.yml has no %q to change", tc.name, tc.from)
			continue
		}
		for i, s := range schemas {
			if err := s.Validate(jsonOf(t, []byte(bad))); err == nil {
				t.Errorf("%s: %s accepts it", tc.name, actionSchemas[i])
			}
		}
	}
}

// Every input of action.yml reaches scripts/action.sh as the variable the
// script reads, and every output it declares is one the script writes.
func TestActionMatchesItsScript(t *testing.T) {
	y, err := os.ReadFile(filepath.Join(root, "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var a struct {
		Inputs  map[string]struct{ Required bool }
		Outputs map[string]struct{ Value string }
		Runs    struct {
			Steps []struct {
				ID  string
				Run string
				Env map[string]string
			}
		}
	}
	if err := yaml.Unmarshal(y, &a); err != nil {
		t.Fatal(err)
	}
	sh, err := os.ReadFile(filepath.Join(root, "scripts/action.sh"))
	if err != nil {
		t.Fatal(err)
	}
	script := string(sh)
	if len(a.Runs.Steps) != 1 || !strings.Contains(a.Runs.Steps[0].Run, `"$GITHUB_ACTION_PATH/scripts/action.sh"`) {
		t.Fatalf("the action's one step must run scripts/action.sh: %+v", a.Runs.Steps)
	}
	step := a.Runs.Steps[0]
	mapped := map[string]string{} // input -> variable
	ref := regexp.MustCompile(`^\$\{\{ inputs\.([a-z0-9-]+) \}\}$`)
	for v, e := range step.Env {
		m := ref.FindStringSubmatch(e)
		if m == nil {
			t.Errorf("env %s=%q is not an input", v, e)
			continue
		}
		mapped[m[1]] = v
	}
	var names []string
	for in := range a.Inputs {
		names = append(names, in)
	}
	sort.Strings(names)
	for _, in := range names {
		v, ok := mapped[in]
		if !ok {
			t.Errorf("input %s reaches no variable of the script", in)
			continue
		}
		if !strings.Contains(script, "${"+v+":") && !strings.Contains(script, "$"+v) {
			t.Errorf("input %s is %s, which scripts/action.sh does not read", in, v)
		}
		delete(mapped, in)
	}
	for in := range mapped {
		t.Errorf("env maps inputs.%s, which action.yml does not declare", in)
	}
	if len(a.Outputs) == 0 {
		t.Fatal("action.yml declares no outputs")
	}
	for out, o := range a.Outputs {
		if o.Value != "${{ steps."+step.ID+".outputs."+out+" }}" {
			t.Errorf("output %s: value %q is not the step's output %s", out, o.Value, out)
		}
		if !strings.Contains(script, `echo "`+out+`=`) {
			t.Errorf("output %s: scripts/action.sh never writes it to GITHUB_OUTPUT", out)
		}
	}
}
