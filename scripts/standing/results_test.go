package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// kept is the one schema of a run kept from the bench history, as every
// file of loadgen/results and pgfault/results has it; a field outside it
// is an error.
type kept struct {
	Date     string   `json:"date"`
	Title    string   `json:"title"`
	Source   string   `json:"source"`
	Commits  []string `json:"commits"`
	Commands []string `json:"commands"`
	Machine  struct {
		Cores  int                        `json:"cores"`
		Floors map[string]json.RawMessage `json:"floors"`
		// FloorsNotMeasured says why a run has no floors; a run has
		// floors or this, never neither.
		FloorsNotMeasured string `json:"floors_not_measured"`
	} `json:"machine"`
	Tables []struct {
		Columns []string   `json:"columns"`
		Rows    [][]string `json:"rows"`
	} `json:"tables"`
	Commit     string  `json:"commit"`
	Command    string  `json:"command"`
	ExitStatus *int    `json:"exit_status"`
	Checks     []Check `json:"checks"`
}

var datePrefix = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2})-[a-z0-9-]+\.json$`)

// checkResults returns what is wrong with one results file: either a
// kept run of the history (schema kept) or bench-server's own
// OUT/results.json (the fields standing reads: host's date, commit and
// cores, the floors, the checks).
func checkResults(name string, b []byte) []string {
	var errs []string
	bad := func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }
	m := datePrefix.FindStringSubmatch(name)
	if m == nil {
		bad("the name is not YYYY-MM-DD-name.json")
		return errs
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		bad("%v", err)
		return errs
	}
	if r.Host != nil {
		if r.Floors == nil {
			bad("bench-server's shape without its floors")
		}
		if len(r.Checks) == 0 {
			bad("bench-server's shape without checks")
		}
	} else {
		var k kept
		d := json.NewDecoder(bytes.NewReader(b))
		d.DisallowUnknownFields()
		if err := d.Decode(&k); err != nil {
			bad("not the kept runs' schema: %v", err)
			return errs
		}
		if k.Title == "" || k.Source == "" {
			bad("no title or source")
		}
		if (len(k.Machine.Floors) == 0) == (k.Machine.FloorsNotMeasured == "") {
			bad("machine: floors or floors_not_measured, exactly one (floors %d, not measured %q)", len(k.Machine.Floors), k.Machine.FloorsNotMeasured)
		}
		for i, t := range k.Tables {
			if len(t.Columns) == 0 || len(t.Rows) == 0 {
				bad("table %d: no columns or no rows", i)
			}
			for j, row := range t.Rows {
				if len(row) != len(t.Columns) {
					bad("table %d, row %d: %d cells for %d columns", i, j, len(row), len(t.Columns))
				}
			}
		}
		if len(k.Tables) == 0 && len(k.Checks) == 0 {
			bad("no tables and no checks: nothing measured")
		}
	}
	if err := r.normalize(); err != nil {
		bad("%v", err)
	}
	if !strings.HasPrefix(r.Date, m[1]) {
		bad("date %q is not the name's %s", r.Date, m[1])
	}
	if r.Machine.Cores <= 0 {
		bad("no cores")
	}
	for _, c := range r.Checks {
		if c.Name == "" || (c.Kind != "target" && c.Kind != "goal" && c.Kind != "info") {
			bad("check %q: no name or a kind not target, goal or info (%q)", c.Name, c.Kind)
		}
		if c.Limit != nil && c.Op != ">=" && c.Op != "<=" {
			bad("check %q: a limit without >= or <=", c.Name)
		}
		if c.Met != nil && c.Limit == nil {
			bad("check %q: judged without a limit", c.Name)
		}
	}
	return errs
}

// Every results file is data of one schema, each with its machine's
// floors or the reason it has none.
func TestEveryResultsFileHasTheSchema(t *testing.T) {
	var files []string
	for _, g := range []string{"../../loadgen/results/*.json", "../../pgfault/results/*.json", "testdata/*.json"} {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 3 {
		t.Fatalf("%d results files found: the globs are wrong", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		if strings.HasPrefix(f, "testdata") {
			name = "2026-12-07-" + name // the fixture is named for what it is
		}
		for _, e := range checkResults(name, b) {
			t.Errorf("%s: %s", f, e)
		}
	}
}

// The schema's check itself: what it must reject.
func TestResultsSchemaRejects(t *testing.T) {
	good := `{"date":"2026-01-02","title":"t","source":"s","commits":[],"commands":[],"machine":{"cores":2,"floors":{},"floors_not_measured":"why"},"tables":[{"columns":["a"],"rows":[["1"]]}]}`
	if errs := checkResults("2026-01-02-t.json", []byte(good)); len(errs) > 0 {
		t.Fatalf("a good file: %v", errs)
	}
	for name, body := range map[string]string{
		"2026-01-02-silent-floors.json": strings.Replace(good, `,"floors_not_measured":"why"`, "", 1),
		"2026-01-02-extra.json":         strings.Replace(good, `"title"`, `"tilte":"x","title"`, 1),
		"2026-01-03-date.json":          good,
		"no-date.json":                  good,
		"2026-01-02-row.json":           strings.Replace(good, `[["1"]]`, `[["1","2"]]`, 1),
		"2026-01-02-check.json":         strings.Replace(good, `"tables"`, `"checks":[{"name":"x","kind":"target","value":1,"met":true}],"tables"`, 1),
		"2026-01-02-host.json":          `{"host":{"date":"2026-01-02T00:00:00Z","commit":"c","cores":2},"checks":[]}`,
	} {
		if errs := checkResults(name, []byte(body)); len(errs) == 0 {
			t.Errorf("%s: accepted", name)
		}
	}
}
