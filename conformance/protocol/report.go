package protocol

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/subspace/kbkit/conformance/report"
)

// TAP writes TAP version 14, as `kbkit spec run` does: one test point per
// check named by its id, SKIP
// directives with their reason, and a YAML diagnostic for each failure with
// the message, expected and got, the request and an excerpt of the raw
// response.
type TAP struct {
	w   *bufio.Writer
	err error
}

// NewTAP returns a TAP writer; it flushes after every test point.
func NewTAP(w io.Writer) *TAP { return &TAP{w: bufio.NewWriter(w)} }

func (t *TAP) printf(format string, args ...any) {
	if t.err == nil {
		_, t.err = fmt.Fprintf(t.w, format, args...)
	}
}

func (t *TAP) flush() error {
	if t.err == nil {
		t.err = t.w.Flush()
	}
	return t.err
}

// Begin writes the version line and the plan.
func (t *TAP) Begin(total int) error {
	t.printf("TAP version 14\n1..%d\n", total)
	return t.flush()
}

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
	switch r.Status {
	case Pass:
		t.printf("ok %d - %s\n", n, desc)
		return t.flush()
	case Skip:
		t.printf("ok %d - %s # SKIP %s\n", n, desc, strings.NewReplacer("\n", " ", "\r", " ").Replace(r.Message))
		return t.flush()
	}
	t.printf("not ok %d - %s\n", n, desc)
	d := tapDiag{Message: r.Message, Severity: "fail", Description: r.Description, Expected: r.Expected, Got: r.Got,
		Request: r.Request, Response: r.Response, DurationMS: r.Duration.Milliseconds()}
	var buf strings.Builder
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(d); err != nil {
		return err
	}
	_ = enc.Close()
	t.printf("  ---\n")
	for _, line := range strings.Split(strings.TrimRight(buf.String(), "\n"), "\n") {
		if line == "" {
			t.printf("\n")
		} else {
			t.printf("  %s\n", line)
		}
	}
	t.printf("  ...\n")
	return t.flush()
}

// End writes the summary as comments.
func (t *TAP) End(s Summary) error {
	t.printf("# %s\n", s)
	if len(s.FailedIDs) > 0 {
		t.printf("# not ok: %s\n", strings.Join(s.FailedIDs, " "))
	}
	return t.flush()
}

// WriteJUnit writes the results as one JUnit XML <testsuite> "protocol"
// with a <testcase> per check (<failure> or <skipped>).
func WriteJUnit(w io.Writer, name string, rs []Result, took time.Duration) error {
	type msg struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr,omitempty"`
		Body    string `xml:",cdata"`
	}
	type tc struct {
		Name      string `xml:"name,attr"`
		Classname string `xml:"classname,attr"`
		Time      string `xml:"time,attr"`
		Failure   *msg   `xml:"failure,omitempty"`
		Skipped   *msg   `xml:"skipped,omitempty"`
	}
	type suite struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Errors   int    `xml:"errors,attr"`
		Skipped  int    `xml:"skipped,attr"`
		Time     string `xml:"time,attr"`
		Cases    []tc   `xml:"testcase"`
	}
	type suites struct {
		XMLName  xml.Name `xml:"testsuites"`
		Name     string   `xml:"name,attr"`
		Tests    int      `xml:"tests,attr"`
		Failures int      `xml:"failures,attr"`
		Errors   int      `xml:"errors,attr"`
		Skipped  int      `xml:"skipped,attr"`
		Time     string   `xml:"time,attr"`
		Suites   []suite  `xml:"testsuite"`
	}
	secs := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }
	s := suite{Name: "protocol"}
	var sum time.Duration
	for _, r := range rs {
		c := tc{Name: r.ID, Classname: "protocol", Time: secs(r.Duration)}
		switch r.Status {
		case Fail:
			c.Failure = &msg{Message: r.Message, Type: "fail", Body: xmlText(r.details())}
			s.Failures++
		case Skip:
			c.Skipped = &msg{Message: r.Message}
			s.Skipped++
		}
		s.Tests++
		sum += r.Duration
		s.Cases = append(s.Cases, c)
	}
	s.Time = secs(sum)
	doc := suites{Name: name, Tests: s.Tests, Failures: s.Failures, Skipped: s.Skipped, Time: secs(took), Suites: []suite{s}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
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

// xmlText replaces the characters XML 1.0 cannot hold with U+FFFD.
func xmlText(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r',
			r >= 0x20 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD, r >= 0x10000 && r <= 0x10FFFF:
			return r
		}
		return '\uFFFD'
	}, s)
}

// WriteJSON writes one JSON object per check and line.
func WriteJSON(w io.Writer, rs []Result) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, r := range rs {
		rec := struct {
			Result
			OK         bool    `json:"ok"`
			DurationMS float64 `json:"duration_ms"`
		}{r, r.Status != Fail, float64(r.Duration.Microseconds()) / 1000}
		if err := enc.Encode(rec); err != nil {
			return err
		}
	}
	return nil
}
