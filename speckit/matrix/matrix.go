package matrix

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"

	"github.com/subspace/kbkit/internal/version"
	"github.com/subspace/kbkit/speckit/report"
)

// Impl is one implementation's run: its records, or why it did not run.
type Impl struct {
	Name    string
	Source  string // the --impl command line or the results file
	Expect  string // its expectations file ("" for none)
	Records []report.Record
	Err     string // it could not run (no records)
}

// Counts are the verdicts of some cases.
type Counts struct {
	Total          int `json:"total"`
	Pass           int `json:"pass"`
	Fail           int `json:"fail"`
	Error          int `json:"error"`
	ExpectedFail   int `json:"expected_fail"`
	UnexpectedPass int `json:"unexpected_pass"`
	Skip           int `json:"skip"`
}

func (c *Counts) add(v report.Verdict) {
	c.Total++
	switch v {
	case report.VerdictPass:
		c.Pass++
	case report.VerdictFail:
		c.Fail++
	case report.VerdictError:
		c.Error++
	case report.VerdictExpectedFail, report.VerdictKnownFlaky:
		c.ExpectedFail++
	case report.VerdictUnexpectedPass:
		c.UnexpectedPass++
	default:
		c.Skip++
	}
}

// Bad is the number of cases that make a run fail.
func (c Counts) Bad() int { return c.Fail + c.Error + c.UnexpectedPass }

// Row is one implementation in the matrix.
type Row struct {
	Name   string            `json:"name"`
	Source string            `json:"source"`
	Expect string            `json:"expect,omitempty"`
	Err    string            `json:"error,omitempty"`
	Suites map[string]Counts `json:"suites"`
	Total  Counts            `json:"total"`
	Tier   string            `json:"tier"`
	// Kit and SpecVersion name the kbkit that wrote the implementation's
	// records and the spec_version it checked (from the records; absent
	// in records of a kbkit before 0.1.0).
	Kit         string `json:"kbkit,omitempty"`
	SpecVersion int    `json:"spec_version,omitempty"`
	// Verdicts maps every case id to its verdict (for comparisons).
	Verdicts map[string]report.Verdict `json:"verdicts"`
	// Failures are the cases that did not pass and were run: failures,
	// errors, unexpected passes and expected failures, with diff and input.
	Failures []report.Record `json:"failures"`
}

// Matrix is the merged result.
type Matrix struct {
	Version int `json:"version"`
	// Kit and SpecVersion name the kbkit that built the matrix and the
	// spec_version it checks (version.Kit, version.Spec).
	Kit         string   `json:"kbkit"`
	SpecVersion int      `json:"spec_version"`
	Suites      []string `json:"suites"`
	Rows        []Row    `json:"implementations"`
	// Changes against an earlier matrix (Compare), new failures first.
	Changes []Change `json:"changes,omitempty"`
	// Against names the earlier matrix.
	Against string `json:"against,omitempty"`
}

// FormatVersion is the version of the matrix JSON.
const FormatVersion = 1

// Tier is a level of conformance with the rule that grants it.
type Tier struct {
	Name  string
	Rule  string
	Color string // shields.io color of its badge
}

// The tiers, best first; an implementation gets the first whose rule holds.
var (
	TierComplete   = Tier{"complete", "every case of the spec passes: no failure, no expected failure, no skip", "brightgreen"}
	TierCompatible = Tier{"compatible", "every case of the commands and window suites passes (the reducer and the sync state machine); the other suites may fail as the expectations file says", "green"}
	TierPartial    = Tier{"partial", "nothing fails beyond what its expectations file declares", "yellow"}
	TierFailing    = Tier{"failing", "a case failed, errored or passed unexpectedly beyond its expectations file", "red"}
	TierNotRun     = Tier{"not run", "the implementation could not be started or its results read", "lightgrey"}
	Tiers          = []Tier{TierComplete, TierCompatible, TierPartial, TierFailing, TierNotRun}
)

// coreSuites are the suites TierCompatible requires.
var coreSuites = []string{"commands", "window"}

// tierOf applies the rules.
func tierOf(r Row) Tier {
	switch {
	case r.Err != "":
		return TierNotRun
	case r.Total.Bad() > 0:
		return TierFailing
	case r.Total.Total > 0 && r.Total.Pass == r.Total.Total:
		return TierComplete
	}
	core := true
	for _, s := range coreSuites {
		c := r.Suites[s]
		core = core && c.Total > 0 && c.Pass == c.Total
	}
	if core {
		return TierCompatible
	}
	return TierPartial
}

// TierByName finds a tier.
func TierByName(name string) Tier {
	for _, t := range Tiers {
		if t.Name == name {
			return t
		}
	}
	return TierNotRun
}

// Build merges the implementations' records. Suites are listed in the
// order they first appear.
func Build(impls []Impl) *Matrix {
	m := &Matrix{Version: FormatVersion, Kit: version.Kit, SpecVersion: version.Spec}
	for _, im := range impls {
		row := Row{Name: im.Name, Source: im.Source, Expect: im.Expect, Err: im.Err,
			Suites: map[string]Counts{}, Verdicts: map[string]report.Verdict{}, Failures: []report.Record{}}
		for _, rec := range im.Records {
			if !slices.Contains(m.Suites, rec.Suite) {
				m.Suites = append(m.Suites, rec.Suite)
			}
			c := row.Suites[rec.Suite]
			c.add(rec.Verdict)
			row.Suites[rec.Suite] = c
			row.Total.add(rec.Verdict)
			row.Verdicts[rec.ID] = rec.Verdict
			if row.Kit == "" {
				row.Kit, row.SpecVersion = rec.Kit, rec.SpecVersion
			}
			if rec.Verdict != report.VerdictPass && rec.Verdict != report.VerdictSkip {
				row.Failures = append(row.Failures, rec)
			}
		}
		sort.SliceStable(row.Failures, func(i, j int) bool { return rank(row.Failures[i].Verdict) < rank(row.Failures[j].Verdict) })
		row.Tier = tierOf(row).Name
		m.Rows = append(m.Rows, row)
	}
	return m
}

// rank orders verdicts for reading: what fails the run first.
func rank(v report.Verdict) int {
	switch v {
	case report.VerdictFail, report.VerdictError:
		return 0
	case report.VerdictUnexpectedPass:
		return 1
	case report.VerdictExpectedFail, report.VerdictKnownFlaky:
		return 2
	}
	return 3
}

// ReadRecords reads a `kbkit spec run --json` file: one record a line.
func ReadRecords(r io.Reader) ([]report.Record, error) {
	var out []report.Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var rec report.Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("matrix: line %d: not a spec run --json record: %v", n, err)
		}
		if rec.ID == "" || rec.Suite == "" || rec.Verdict == "" {
			return nil, fmt.Errorf("matrix: line %d: not a spec run --json record (no id, suite or verdict)", n)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("matrix: no records (a spec run --json file has one per case)")
	}
	return out, nil
}

// WriteJSON writes the matrix as one JSON document.
func (m *Matrix) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	return enc.Encode(m)
}

// ReadJSON reads a matrix written by WriteJSON.
func ReadJSON(r io.Reader) (*Matrix, error) {
	var m Matrix
	dec := json.NewDecoder(r)
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("matrix: not a matrix JSON file: %v", err)
	}
	if m.Version != FormatVersion {
		return nil, fmt.Errorf("matrix: version %d, want %d (a file of kbkit spec matrix --json)", m.Version, FormatVersion)
	}
	return &m, nil
}

// Endpoint is a shields.io endpoint badge (https://shields.io/badges/endpoint-badge).
type Endpoint struct {
	SchemaVersion int    `json:"schemaVersion"`
	Label         string `json:"label"`
	Message       string `json:"message"`
	Color         string `json:"color"`
}

// Badge is the endpoint JSON of one implementation: its tier and how many
// cases pass.
func Badge(r Row) Endpoint {
	t := TierByName(r.Tier)
	msg := t.Name
	if r.Err == "" {
		msg = fmt.Sprintf("%s · %d/%d passed", t.Name, r.Total.Pass, r.Total.Total)
	}
	return Endpoint{SchemaVersion: 1, Label: "kbkit spec", Message: msg, Color: t.Color}
}
