package coverage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/subspace/kbkit/sim"
	"github.com/subspace/kbkit/speckit/cases"
	"github.com/subspace/kbkit/wiresuite"
)

// WaiversFile is the spec's list of requirements deliberately untested.
const WaiversFile = "waivers.yaml"

// Sources are what tests the spec: its cases, the protocol checks and
// the simulator checkers, each with the requirement ids it declares.
type Sources struct {
	Cases    []cases.Case
	Checks   map[string][]string // check id -> requirement ids (wiresuite.Covers)
	Checkers map[string][]string // checker -> requirement ids (sim.Covers)
	// CheckIDs and CheckerNames are every check and checker that exists.
	CheckIDs, CheckerNames []string
	// CaseCovers maps a requirement id to case id patterns (caseCovers).
	CaseCovers map[string][]string
}

// Kit returns the sources of kbkit itself, with the given cases.
func Kit(all []cases.Case) Sources {
	s := Sources{Cases: all, Checks: wiresuite.Covers, Checkers: sim.Covers, CheckerNames: sim.Checkers, CaseCovers: caseCovers}
	for _, c := range wiresuite.Checks() {
		s.CheckIDs = append(s.CheckIDs, c.ID)
	}
	return s
}

// Entry is one requirement and what tests or waives it.
type Entry struct {
	Requirement
	Cases    []string `json:"cases,omitempty"`
	Checks   []string `json:"checks,omitempty"`
	Checkers []string `json:"checkers,omitempty"`
	Waiver   string   `json:"waiver,omitempty"`
}

// Covered reports whether a case, check or checker tests the requirement.
func (e Entry) Covered() bool { return len(e.Cases)+len(e.Checks)+len(e.Checkers) > 0 }

// Report is the coverage of every requirement, in file and line order.
type Report struct {
	Entries []Entry
}

// Uncovered lists the entries of the level ("" any) neither covered nor
// waived.
func (r Report) Uncovered(level string) []Entry {
	var out []Entry
	for _, e := range r.Entries {
		if !e.Covered() && e.Waiver == "" && (level == "" || e.Level == level) {
			out = append(out, e)
		}
	}
	return out
}

// ErrBadInput is wrapped by Build's errors about the inputs themselves: a
// normative sentence without a tag, an id tagged twice, a declaration or
// waiver naming an unknown requirement, check or case.
var ErrBadInput = errors.New("coverage: bad input")

type waiverFile struct {
	Waivers []struct {
		ID     string `yaml:"id"`
		Reason string `yaml:"reason"`
	} `yaml:"waivers"`
}

// ReadWaivers reads the waivers file of the spec directory: id -> reason.
func ReadWaivers(fsys fs.FS) (map[string]string, error) {
	data, err := fs.ReadFile(fsys, WaiversFile)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	var wf waiverFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&wf); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadInput, WaiversFile, err)
	}
	out := map[string]string{}
	for _, w := range wf.Waivers {
		switch {
		case w.ID == "" || strings.TrimSpace(w.Reason) == "":
			return nil, fmt.Errorf("%w: %s: a waiver needs an id and a reason (id %q)", ErrBadInput, WaiversFile, w.ID)
		case out[w.ID] != "":
			return nil, fmt.Errorf("%w: %s: %s is waived twice", ErrBadInput, WaiversFile, w.ID)
		}
		out[w.ID] = strings.TrimSpace(w.Reason)
	}
	return out, nil
}

// Build reads the spec directory's prose and waivers and ties each
// requirement to what src declares it tested by. Every problem of the
// inputs is in the error (wrapping ErrBadInput), one a line.
func Build(fsys fs.FS, src Sources) (Report, error) {
	reqs, probs, err := ReadProse(fsys)
	if err != nil {
		return Report{}, err
	}
	var bad []string
	for _, p := range probs {
		bad = append(bad, p.String())
	}
	waivers, err := ReadWaivers(fsys)
	if err != nil {
		return Report{}, err
	}
	idx := map[string]int{}
	entries := make([]Entry, len(reqs))
	for i, r := range reqs {
		idx[r.ID] = i
		entries[i] = Entry{Requirement: r, Waiver: waivers[r.ID]}
	}
	for _, id := range sortedKeys(waivers) {
		if _, ok := idx[id]; !ok {
			bad = append(bad, fmt.Sprintf("%s: waiver of %s, which no [req: %s] tag of the prose names", WaiversFile, id, id))
		}
	}
	declare := func(kind, name string, known map[string]bool, ids []string, add func(*Entry)) {
		if !known[name] {
			bad = append(bad, fmt.Sprintf("%s %s declares requirements but is no %s of the kit", kind, name, kind))
			return
		}
		for _, id := range ids {
			i, ok := idx[id]
			if !ok {
				bad = append(bad, fmt.Sprintf("%s %s names requirement %s, which no [req: %s] tag of the prose names", kind, name, id, id))
				continue
			}
			add(&entries[i])
		}
	}
	checks, checkers := set(src.CheckIDs), set(src.CheckerNames)
	for _, name := range sortedKeys(src.Checks) {
		declare("check", name, checks, src.Checks[name], func(e *Entry) { e.Checks = append(e.Checks, name) })
	}
	for _, name := range sortedKeys(src.Checkers) {
		declare("checker", name, checkers, src.Checkers[name], func(e *Entry) { e.Checkers = append(e.Checkers, name) })
	}
	for _, id := range sortedKeys(src.CaseCovers) {
		i, ok := idx[id]
		if !ok {
			bad = append(bad, fmt.Sprintf("case rule names requirement %s, which no [req: %s] tag of the prose names", id, id))
			continue
		}
		for _, p := range src.CaseCovers[id] {
			n := 0
			for _, c := range src.Cases {
				if caseMatches(p, c.ID) {
					entries[i].Cases = append(entries[i].Cases, c.ID)
					n++
				}
			}
			if n == 0 && len(src.Cases) > 0 {
				bad = append(bad, fmt.Sprintf("case rule of %s: no case is %q", id, p))
			}
		}
	}
	for _, c := range src.Cases {
		for _, id := range derivedCovers(c) {
			if i, ok := idx[id]; ok {
				entries[i].Cases = append(entries[i].Cases, c.ID)
			}
		}
	}
	for i := range entries {
		entries[i].Cases = dedupe(entries[i].Cases)
	}
	rep := Report{Entries: entries}
	if len(bad) > 0 {
		return rep, fmt.Errorf("%w:\n%s", ErrBadInput, strings.Join(bad, "\n"))
	}
	return rep, nil
}

func set(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func dedupe(xs []string) []string {
	sort.Strings(xs)
	out := xs[:0]
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}
