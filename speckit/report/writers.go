package report

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/subspace/kbkit/internal/version"
)

func itoa(n int) string { return strconv.Itoa(n) }

// ---- TAP 14 ----

// TAP writes TAP version 14 (https://testanything.org/tap-version-14-specification.html):
// a plan, one test point per case named by its id, and for every case that
// is not a plain pass or skip a YAML diagnostic block with the message, the
// case's file and line, the matching expectation and the diff.
type TAP struct{ TAPStream }

// NewTAP returns a TAP writer; it flushes after every test point.
func NewTAP(w io.Writer) *TAP { return &TAP{NewTAPStream(w)} }

// TAPStream is the output side every TAP writer shares: buffered writes
// that remember the first error, the version line and the plan.
type TAPStream struct {
	w   *bufio.Writer
	err error
}

// NewTAPStream wraps w.
func NewTAPStream(w io.Writer) TAPStream { return TAPStream{w: bufio.NewWriter(w)} }

// Printf writes unless an earlier write failed.
func (t *TAPStream) Printf(format string, args ...any) {
	if t.err == nil {
		_, t.err = fmt.Fprintf(t.w, format, args...)
	}
}

// Flush flushes and returns the first error of the stream.
func (t *TAPStream) Flush() error {
	if t.err == nil {
		t.err = t.w.Flush()
	}
	return t.err
}

// Begin writes the version line, the plan and a comment naming the kit
// and the spec_version it checks (version.Line).
func (t *TAPStream) Begin(total int) error {
	t.Printf("TAP version 14\n1..%d\n# %s\n", total, version.Line())
	return t.Flush()
}

// TAPDescription escapes a test point description: `\` and `#` are
// backslash-escaped, line breaks become spaces.
func TAPDescription(s string) string {
	s = strings.NewReplacer(`\`, `\\`, "#", `\#`, "\n", " ", "\r", " ").Replace(s)
	return s
}

func directiveText(s string) string {
	return strings.NewReplacer("\n", " ", "\r", " ").Replace(s)
}

type tapDiag struct {
	Message  string       `yaml:"message"`
	Severity string       `yaml:"severity"`
	Status   string       `yaml:"status"`
	Suite    string       `yaml:"suite,omitempty"`
	File     string       `yaml:"file,omitempty"`
	Line     int          `yaml:"line,omitempty"`
	Expected *Expectation `yaml:"expected,omitempty"`
	Diff     string       `yaml:"diff,omitempty"`
	// Input is the request the case sent (cases.Input): the input
	// document and command, the text, the window script or the pages.
	Input map[string]any `yaml:"input,omitempty"`
}

// Result writes one test point.
func (t *TAP) Result(n int, r Result) error {
	desc := TAPDescription(r.ID)
	switch r.Verdict {
	case VerdictPass:
		t.Printf("ok %d - %s\n", n, desc)
		if r.Expected != nil && r.Expected.Status == ExpectFlaky {
			t.Printf("# %s\n", directiveText(r.Message))
		}
		return t.Flush()
	case VerdictSkip:
		t.Printf("ok %d - %s # SKIP %s\n", n, desc, directiveText(r.Message))
		return t.Flush()
	case VerdictExpectedFail, VerdictKnownFlaky:
		t.Printf("not ok %d - %s # TODO %s\n", n, desc, directiveText(r.Message))
	default:
		t.Printf("not ok %d - %s\n", n, desc)
	}
	d := tapDiag{
		Message: r.Message, Severity: string(r.Verdict), Status: string(r.Status),
		Suite: r.Suite, File: r.File, Line: r.Line, Expected: r.Expected,
		Diff: strings.TrimRight(r.Diff, "\n"), Input: r.Input,
	}
	block, err := TAPYAML(d)
	if err != nil {
		return err
	}
	t.Printf("%s", block)
	return t.Flush()
}

// TAPYAML renders v as a TAP 14 YAML diagnostic block ("  ---" ... "  ...").
func TAPYAML(v any) (string, error) {
	var buf strings.Builder
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	_ = enc.Close()
	var out strings.Builder
	out.WriteString("  ---\n")
	for _, line := range strings.Split(strings.TrimRight(buf.String(), "\n"), "\n") {
		if line == "" {
			out.WriteString("\n")
		} else {
			out.WriteString("  " + line + "\n")
		}
	}
	out.WriteString("  ...\n")
	return out.String(), nil
}

// End writes the summary as comments, then the ids of the cases that are
// not ok, one a line.
func (t *TAP) End(s Summary) error {
	t.Printf("# %s\n%s", s, NotOKTrailer(s.Failed))
	return t.Flush()
}

// ---- JUnit XML ----

// JUnit collects the results and writes one JUnit XML document at End: a
// <testsuite> per suite (in order of first appearance), a <testcase> per
// case with classname = suite, and <failure>, <error> or <skipped>.
// Expected failures are <skipped> with their reason; unexpected passes are
// <failure>s.
type JUnit struct {
	w      io.Writer
	name   string
	start  time.Time
	suites []*JUnitSuite
	byName map[string]*JUnitSuite
}

// NewJUnit returns a JUnit writer; name is the <testsuites> name.
func NewJUnit(w io.Writer, name string) *JUnit {
	return &JUnit{w: w, name: name, byName: map[string]*JUnitSuite{}}
}

// JUnitDoc is a JUnit XML document; JUnitSuite, JUnitCase and JUnitMsg are
// its parts. WriteJUnit fills the totals and writes it.
type JUnitDoc struct {
	XMLName  xml.Name      `xml:"testsuites"`
	Name     string        `xml:"name,attr"`
	Tests    int           `xml:"tests,attr"`
	Failures int           `xml:"failures,attr"`
	Errors   int           `xml:"errors,attr"`
	Skipped  int           `xml:"skipped,attr"`
	Time     string        `xml:"time,attr"`
	Suites   []*JUnitSuite `xml:"testsuite"`
}

type JUnitSuite struct {
	Name     string `xml:"name,attr"`
	Tests    int    `xml:"tests,attr"`
	Failures int    `xml:"failures,attr"`
	Errors   int    `xml:"errors,attr"`
	Skipped  int    `xml:"skipped,attr"`
	Time     string `xml:"time,attr"`
	// Properties are set by WriteJUnit: the kit's version and the
	// spec_version it checks (kbkit.version, kbkit.spec_version).
	Properties []JUnitProperty `xml:"properties>property"`
	Cases      []JUnitCase     `xml:"testcase"`
	dur        time.Duration
}

// JUnitProperty is a <property name value> of a suite's <properties>.
type JUnitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// versionProperties name the kit and the spec_version in every suite.
func versionProperties() []JUnitProperty {
	return []JUnitProperty{{"kbkit.version", version.Kit}, {"kbkit.spec_version", strconv.Itoa(version.Spec)}}
}

type JUnitCase struct {
	Name      string    `xml:"name,attr"`
	Classname string    `xml:"classname,attr"`
	File      string    `xml:"file,attr,omitempty"`
	Line      int       `xml:"line,attr,omitempty"`
	Time      string    `xml:"time,attr"`
	Failure   *JUnitMsg `xml:"failure,omitempty"`
	Error     *JUnitMsg `xml:"error,omitempty"`
	Skipped   *JUnitMsg `xml:"skipped,omitempty"`
}

type JUnitMsg struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Body    string `xml:",cdata"`
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

func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }

// Begin starts the clock.
func (j *JUnit) Begin(int) error {
	j.start = time.Now()
	return nil
}

// Result records one case.
func (j *JUnit) Result(_ int, r Result) error {
	name := r.Suite
	if name == "" {
		name = "unknown"
	}
	s := j.byName[name]
	if s == nil {
		s = &JUnitSuite{Name: name}
		j.byName[name] = s
		j.suites = append(j.suites, s)
	}
	c := JUnitCase{Name: r.ID, Classname: name, File: r.File, Line: r.Line, Time: seconds(r.Duration)}
	body := r.Diff
	if r.Input != nil {
		if b, err := json.Marshal(r.Input); err == nil {
			body = strings.TrimRight(body, "\n") + "\ninput: " + string(b)
		}
	}
	if r.Expected != nil && r.Expected.Issue != "" {
		body = strings.TrimRight("issue: "+r.Expected.Issue+"\n"+body, "\n")
	}
	body = xmlText(body)
	switch r.Verdict {
	case VerdictFail, VerdictUnexpectedPass:
		c.Failure = &JUnitMsg{Message: r.Message, Type: string(r.Verdict), Body: body}
		s.Failures++
	case VerdictError:
		c.Error = &JUnitMsg{Message: r.Message, Type: string(r.Verdict), Body: body}
		s.Errors++
	case VerdictSkip, VerdictExpectedFail, VerdictKnownFlaky:
		c.Skipped = &JUnitMsg{Message: r.Message, Type: string(r.Verdict), Body: body}
		s.Skipped++
	}
	s.Tests++
	s.dur += r.Duration
	s.Cases = append(s.Cases, c)
	return nil
}

// End writes the document.
func (j *JUnit) End(Summary) error {
	for _, s := range j.suites {
		s.Time = seconds(s.dur)
	}
	return WriteJUnit(j.w, JUnitDoc{Name: j.name, Suites: j.suites, Time: seconds(time.Since(j.start))})
}

// WriteJUnit sums the suites' counts into the document's, names the kit
// and the spec_version in each suite's properties and writes it, XML
// header first. Message bodies should go through XMLText.
func WriteJUnit(w io.Writer, doc JUnitDoc) error {
	doc.Tests, doc.Failures, doc.Errors, doc.Skipped = 0, 0, 0, 0
	for _, s := range doc.Suites {
		s.Properties = append(versionProperties(), s.Properties...)
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
		doc.Skipped += s.Skipped
	}
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

// XMLText replaces the characters XML 1.0 cannot hold with U+FFFD.
func XMLText(s string) string { return xmlText(s) }

// Seconds formats a duration as JUnit's time attribute.
func Seconds(d time.Duration) string { return seconds(d) }

// ---- JSON lines ----

// JSON writes one JSON object per case and line.
type JSON struct {
	enc *json.Encoder
}

// NewJSON returns a JSON lines writer.
func NewJSON(w io.Writer) *JSON {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &JSON{enc: enc}
}

// Record is the JSON object written per case.
type Record struct {
	// Kit and SpecVersion name the kbkit that wrote the record and the
	// spec_version it checks (version.Kit, version.Spec).
	Kit         string `json:"kbkit"`
	SpecVersion int    `json:"spec_version"`
	ID          string `json:"id"`
	Suite       string `json:"suite"`
	File        string `json:"file"`
	Line        int    `json:"line"`
	// Status is the outcome: pass, fail, skip or error.
	Status string `json:"status"`
	// Verdict is the outcome judged against the expectations; OK says
	// whether it keeps the run green.
	Verdict    Verdict      `json:"verdict"`
	OK         bool         `json:"ok"`
	Message    string       `json:"message,omitempty"`
	Diff       string       `json:"diff,omitempty"`
	Expected   *Expectation `json:"expected,omitempty"`
	DurationMS float64      `json:"duration_ms"`
	// Input is the request a failing or errored case sent (cases.Input).
	Input map[string]any `json:"input,omitempty"`
}

// Begin does nothing.
func (*JSON) Begin(int) error { return nil }

// Result writes one line.
func (j *JSON) Result(_ int, r Result) error {
	return j.enc.Encode(Record{
		Kit: version.Kit, SpecVersion: version.Spec, ID: r.ID, Suite: r.Suite, File: r.File, Line: r.Line, Status: string(r.Status),
		Verdict: r.Verdict, OK: r.Verdict.OK(), Message: r.Message, Diff: r.Diff,
		Expected: r.Expected, DurationMS: float64(r.Duration.Microseconds()) / 1000, Input: r.Input,
	})
}

// End does nothing.
func (*JSON) End(Summary) error { return nil }

// ---- progress ----

// IsTerminal reports whether w is a character device (a terminal).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Progress draws one self-erasing status line ("[n/total] ...") on a
// terminal, for long runs only: from half a second into the run, at most
// ten times a second. A nil *Progress does nothing.
type Progress struct {
	w     io.Writer
	total int
	start time.Time
	last  time.Time
	shown bool
}

// progressDelay is how long a run goes before the progress line appears.
const progressDelay = 500 * time.Millisecond

// NewProgress returns a progress line on w, or nil when w is not a
// terminal.
func NewProgress(w io.Writer, total int) *Progress {
	if !IsTerminal(w) {
		return nil
	}
	return &Progress{w: w, total: total, start: time.Now()}
}

// Update redraws the line after n of total cases.
func (p *Progress) Update(n int, s Summary, id string) {
	if p == nil || time.Since(p.start) < progressDelay || n >= p.total ||
		time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last = time.Now()
	bad := s.Counts[VerdictFail] + s.Counts[VerdictUnexpectedPass]
	line := fmt.Sprintf("[%d/%d] %d failed, %d errored  %s", n, p.total, bad, s.Counts[VerdictError], id)
	if len(line) > 100 {
		line = line[:100]
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s", line)
	p.shown = true
}

// Clear erases the line (before other output goes to the terminal).
func (p *Progress) Clear() {
	if p == nil || !p.shown {
		return
	}
	fmt.Fprint(p.w, "\r\x1b[K")
	p.shown = false
}

// NotOKTrailer is the TAP trailer of every kbkit report: the ids that
// are not ok, one a line after their count ("" when there are none).
func NotOKTrailer(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# not ok (%d):\n", len(ids))
	for _, id := range ids {
		fmt.Fprintf(&b, "#   %s\n", id)
	}
	return b.String()
}
