package coverage

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Summary counts a report's requirements.
type Summary struct {
	Requirements  int `json:"requirements"`
	MUST          int `json:"must"`
	SHOULD        int `json:"should"`
	Covered       int `json:"covered"`
	Waived        int `json:"waived"`
	Uncovered     int `json:"uncovered"`
	UncoveredMUST int `json:"uncovered_must"`
}

// Summary counts r's requirements; a requirement both tested and waived
// counts as covered.
func (r Report) Summary() Summary {
	var s Summary
	for _, e := range r.Entries {
		s.Requirements++
		if e.Level == MUST {
			s.MUST++
		} else {
			s.SHOULD++
		}
		switch {
		case e.Covered():
			s.Covered++
		case e.Waiver != "":
			s.Waived++
		default:
			s.Uncovered++
			if e.Level == MUST {
				s.UncoveredMUST++
			}
		}
	}
	return s
}

func (s Summary) String() string {
	return fmt.Sprintf("%d requirements (%d MUST, %d SHOULD): %d covered, %d waived, %d uncovered (%d MUST)",
		s.Requirements, s.MUST, s.SHOULD, s.Covered, s.Waived, s.Uncovered, s.UncoveredMUST)
}

// WriteText writes one block per entry (only the uncovered ones when
// uncovered is set) and the summary.
func (r Report) WriteText(w io.Writer, uncovered bool) error {
	var b strings.Builder
	for _, e := range r.Entries {
		if uncovered && (e.Covered() || e.Waiver != "") {
			continue
		}
		fmt.Fprintf(&b, "%s %s %s:%d\n", e.ID, e.Level, e.File, e.Line)
		switch {
		case e.Covered():
			if len(e.Cases) > 0 {
				fmt.Fprintf(&b, "  cases (%d): %s\n", len(e.Cases), list(e.Cases, 3))
			}
			if len(e.Checks) > 0 {
				fmt.Fprintf(&b, "  checks: %s\n", strings.Join(e.Checks, ", "))
			}
			if len(e.Checkers) > 0 {
				fmt.Fprintf(&b, "  checkers: %s\n", strings.Join(e.Checkers, ", "))
			}
		case e.Waiver != "":
			fmt.Fprintf(&b, "  waived: %s\n", e.Waiver)
		default:
			b.WriteString("  UNCOVERED: no case, check or checker tests it and spec/waivers.yaml does not waive it\n")
		}
	}
	fmt.Fprintln(&b, r.Summary())
	_, err := io.WriteString(w, b.String())
	return err
}

// list names the first n of xs and how many more there are.
func list(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return fmt.Sprintf("%s, ... and %d more", strings.Join(xs[:n], ", "), len(xs)-n)
}

// WriteJSON writes the report as one JSON object: every requirement
// (only the uncovered ones when uncovered is set) and the summary.
func (r Report) WriteJSON(w io.Writer, uncovered bool) error {
	entries := r.Entries
	if uncovered {
		entries = r.Uncovered("")
	}
	if entries == nil {
		entries = []Entry{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Requirements []Entry `json:"requirements"`
		Summary      Summary `json:"summary"`
	}{entries, r.Summary()})
}
