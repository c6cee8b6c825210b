package wiresuite

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/subspace/kbkit/internal/version"
	"github.com/subspace/kbkit/speckit/report"
)

// TAP writes TAP version 14, as `kbkit spec run` does: one test point per
// check named by its id, SKIP
// directives with their reason, and a YAML diagnostic for each failure with
// the message, expected and got, the request and an excerpt of the raw
// response.
type TAP struct{ report.TAPStream }

// NewTAP returns a TAP writer; it flushes after every test point.
func NewTAP(w io.Writer) *TAP { return &TAP{report.NewTAPStream(w)} }

type tapDiag struct {
	Message     string `yaml:"message"`
	Severity    string `yaml:"severity"`
	Description string `yaml:"description,omitempty"`
	Expected    string `yaml:"expected,omitempty"`
	Got         string `yaml:"got,omitempty"`
	Request     string `yaml:"request,omitempty"`
	Response    string `yaml:"response,omitempty"`
	DurationMS  int64  `yaml:"duration_ms"`
}

// Result writes one test point.
func (t *TAP) Result(n int, r Result) error {
	desc := report.TAPDescription(r.ID)
	oneLine := strings.NewReplacer("\n", " ", "\r", " ").Replace
	switch {
	case r.Status == Pass && r.Verdict != report.VerdictUnexpectedPass:
		t.Printf("ok %d - %s\n", n, desc)
		if r.Message != "" { // known flaky, passed
			t.Printf("# %s: %s\n", r.ID, oneLine(r.Message))
		}
		return t.Flush()
	case r.Status == Skip:
		t.Printf("ok %d - %s # SKIP %s\n", n, desc, oneLine(r.Message))
		return t.Flush()
	case r.Verdict == report.VerdictExpectedFail || r.Verdict == report.VerdictKnownFlaky:
		t.Printf("not ok %d - %s # TODO %s\n", n, desc, oneLine(r.Message))
	default:
		t.Printf("not ok %d - %s\n", n, desc)
	}
	sev := "fail"
	if r.Verdict != "" {
		sev = string(r.Verdict)
	}
	d := tapDiag{Message: r.Message, Severity: sev, Description: r.Description, Expected: r.Expected, Got: r.Got,
		Request: r.Request, Response: r.Response, DurationMS: r.Duration.Milliseconds()}
	block, err := report.TAPYAML(d)
	if err != nil {
		return err
	}
	t.Printf("%s", block)
	return t.Flush()
}

// End writes the summary as comments.
func (t *TAP) End(s Summary) error {
	t.Printf("# %s\n%s", s, report.NotOKTrailer(s.FailedIDs))
	return t.Flush()
}

// WriteJUnit writes the results as one JUnit XML <testsuite> "protocol"
// with a <testcase> per check (<failure> or <skipped>).
func WriteJUnit(w io.Writer, name string, rs []Result, took time.Duration) error {
	s := &report.JUnitSuite{Name: "protocol"}
	var sum time.Duration
	for _, r := range rs {
		c := report.JUnitCase{Name: r.ID, Classname: "protocol", Time: report.Seconds(r.Duration)}
		switch {
		case r.Verdict == report.VerdictUnexpectedPass:
			c.Failure = &report.JUnitMsg{Message: r.Message, Type: string(r.Verdict)}
			s.Failures++
		case r.Verdict == report.VerdictExpectedFail || r.Verdict == report.VerdictKnownFlaky:
			c.Skipped = &report.JUnitMsg{Message: r.Message, Type: string(r.Verdict), Body: report.XMLText(r.details())}
			s.Skipped++
		case r.Status == Fail:
			c.Failure = &report.JUnitMsg{Message: r.Message, Type: "fail", Body: report.XMLText(r.details())}
			s.Failures++
		case r.Status == Skip:
			c.Skipped = &report.JUnitMsg{Message: r.Message}
			s.Skipped++
		}
		s.Tests++
		sum += r.Duration
		s.Cases = append(s.Cases, c)
	}
	s.Time = report.Seconds(sum)
	return report.WriteJUnit(w, report.JUnitDoc{Name: name, Time: report.Seconds(took), Suites: []*report.JUnitSuite{s}})
}

// details is a failure's evidence as text.
func (r Result) details() string {
	var b strings.Builder
	b.WriteString(r.Description + "\n")
	for _, f := range []struct{ k, v string }{{"expected", r.Expected}, {"got", r.Got}, {"request", r.Request}, {"response", r.Response}} {
		if f.v != "" {
			fmt.Fprintf(&b, "\n%s:\n%s\n", f.k, f.v)
		}
	}
	return b.String()
}

// WriteJSON writes one JSON object per check and line, each naming the
// kit and the spec_version (kbkit, spec_version).
func WriteJSON(w io.Writer, rs []Result) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, r := range rs {
		rec := struct {
			Kit         string `json:"kbkit"`
			SpecVersion int    `json:"spec_version"`
			Result
			OK         bool    `json:"ok"`
			DurationMS float64 `json:"duration_ms"`
		}{version.Kit, version.Spec, r, r.ok(), float64(r.Duration.Microseconds()) / 1000}
		if err := enc.Encode(rec); err != nil {
			return err
		}
	}
	return nil
}
