// Package changelog reads CHANGELOG.md: its versions, newest first, each
// with the spec_version it states and the ids it names as added, changed
// or removed, per kind of id (spec cases, protocol checks, simulator
// checkers). Its test holds the changelog to the ids the code and spec
// define (spec/ids.txt) and to the versioning rules of its head.
package changelog

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Kinds of ids, as spec/ids.txt and the changelog's sections name them.
const (
	KindCase    = "case"    // a spec case id (kbkit spec run)
	KindCheck   = "check"   // a protocol check id (kbkit conformance protocol)
	KindChecker = "checker" // a simulator checker (kbkit conformance run)
)

// Kinds are the kinds of ids in the order the changelog lists them.
var Kinds = []string{KindCase, KindCheck, KindChecker}

// sectionKinds are the `###` headings of each kind.
var sectionKinds = map[string]string{
	"Spec cases":         KindCase,
	"Protocol checks":    KindCheck,
	"Simulator checkers": KindChecker,
}

// Changes.
const (
	Added   = "Added"
	Changed = "Changed"
	Removed = "Removed"
)

// Entry is one id a version names, with the line that names it.
type Entry struct {
	Kind, Change, ID string
	Line             int
	Text             string // the bullet's text
}

// Version is one `## [...]` section.
type Version struct {
	Name        string // "Unreleased" or X.Y.Z
	Date        string // YYYY-MM-DD; "" for Unreleased
	SpecVersion int    // the section's "spec_version: N" line; 0 when none
	Line        int
	Entries     []Entry
	// Text is the section's body (without its heading).
	Text string
}

// Released reports whether v is a released version (not Unreleased).
func (v Version) Released() bool { return v.Name != "Unreleased" }

// Semver is X.Y.Z of a released version.
func (v Version) Semver() ([3]int, error) { return ParseSemver(v.Name) }

// Log is the changelog, newest version first.
type Log struct {
	Versions []Version
}

var (
	headingRE = regexp.MustCompile(`^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?\s*$`)
	semverRE  = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$`)
	specRE    = regexp.MustCompile(`^spec_version: (\d+)`)
	idsRE     = regexp.MustCompile("^- ((?:`[^`]+`(?:, )?)+)")
	idRE      = regexp.MustCompile("`([^`]+)`")
)

// ParseSemver reads X.Y.Z.
func ParseSemver(s string) ([3]int, error) {
	m := semverRE.FindStringSubmatch(s)
	if m == nil {
		return [3]int{}, fmt.Errorf("%q is not a semantic version X.Y.Z", s)
	}
	var out [3]int
	for i := range out {
		out[i], _ = strconv.Atoi(m[i+1])
	}
	return out, nil
}

// Parse reads a changelog. The sections before the first `## [` (the
// head, the versioning policy) are not versions. In a version, a `###`
// heading names a kind (Spec cases, Protocol checks, Simulator checkers)
// or ends one, a `####` heading the change (Added, Changed, Removed), and
// a bullet that starts with backquoted ids (`a`, `b`: why) names them.
func Parse(data []byte) (*Log, error) {
	log := &Log{}
	var v *Version
	kind, change := "", ""
	var body strings.Builder
	flush := func() {
		if v != nil {
			v.Text = body.String()
			log.Versions = append(log.Versions, *v)
		}
		body.Reset()
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			if !strings.HasPrefix(line, "## [") {
				if v != nil {
					return nil, fmt.Errorf("CHANGELOG.md:%d: %q: a section after the first version is a version, ## [X.Y.Z] - YYYY-MM-DD", n, line)
				}
				continue
			}
			m := headingRE.FindStringSubmatch(line)
			if m == nil {
				return nil, fmt.Errorf("CHANGELOG.md:%d: %q is not ## [X.Y.Z] - YYYY-MM-DD or ## [Unreleased]", n, line)
			}
			flush()
			v = &Version{Name: m[1], Date: m[2], Line: n}
			if v.Released() {
				if _, err := ParseSemver(v.Name); err != nil || v.Date == "" {
					return nil, fmt.Errorf("CHANGELOG.md:%d: %q is not ## [X.Y.Z] - YYYY-MM-DD", n, line)
				}
			} else if v.Date != "" {
				return nil, fmt.Errorf("CHANGELOG.md:%d: Unreleased has no date", n)
			}
			kind, change = "", ""
			continue
		}
		if v == nil {
			continue
		}
		body.WriteString(line + "\n")
		switch {
		case strings.HasPrefix(line, "### "):
			kind, change = sectionKinds[strings.TrimSpace(line[4:])], ""
		case strings.HasPrefix(line, "#### "):
			change = strings.TrimSpace(line[5:])
			if kind != "" && change != Added && change != Changed && change != Removed {
				return nil, fmt.Errorf("CHANGELOG.md:%d: %q: a change is Added, Changed or Removed", n, line)
			}
		case v.SpecVersion == 0 && specRE.MatchString(line):
			v.SpecVersion, _ = strconv.Atoi(specRE.FindStringSubmatch(line)[1])
		case kind != "" && idsRE.MatchString(line):
			if change == "" {
				return nil, fmt.Errorf("CHANGELOG.md:%d: ids outside an Added, Changed or Removed list", n)
			}
			for _, m := range idRE.FindAllStringSubmatch(idsRE.FindString(line), -1) {
				v.Entries = append(v.Entries, Entry{Kind: kind, Change: change, ID: m[1], Line: n, Text: line})
			}
		}
	}
	flush()
	return log, sc.Err()
}

// Named reports whether any version names id of kind under change.
func (l *Log) Named(kind, change, id string) bool {
	for _, v := range l.Versions {
		if v.Names(kind, change, id) {
			return true
		}
	}
	return false
}

// Names reports whether v names id of kind under change.
func (v Version) Names(kind, change, id string) bool {
	for _, e := range v.Entries {
		if e.Kind == kind && e.Change == change && e.ID == id {
			return true
		}
	}
	return false
}

// Empty reports whether v's body says nothing: no line but blank ones,
// headings and its spec_version line.
func (v Version) Empty() bool {
	for _, line := range strings.Split(v.Text, "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") && !specRE.MatchString(line) {
			return false
		}
	}
	return true
}

// Newest is the top section: [Unreleased] when the changelog has one,
// else the newest version. It is where an id that changes goes.
func (l *Log) Newest() (Version, bool) {
	if len(l.Versions) == 0 {
		return Version{}, false
	}
	return l.Versions[0], true
}

// Open is the section where a change of ids goes: [Unreleased] when the
// changelog has one; else, while kit (version.Kit) is a release, the
// newest version, which may not be tagged yet; while kit is X.Y.Z-dev,
// every dated version is cut, so it is an [Unreleased] yet to be written
// (an empty Version named Unreleased).
func (l *Log) Open(kit string) Version {
	top, ok := l.Newest()
	if _, dev, _ := ParseKit(kit); ok && (!top.Released() || !dev) {
		return top
	}
	return Version{Name: "Unreleased"}
}

// NewestRelease is the newest dated version.
func (l *Log) NewestRelease() (Version, bool) {
	for _, v := range l.Versions {
		if v.Released() {
			return v, true
		}
	}
	return Version{}, false
}

// DevSuffix marks a kit version between two releases: after vX.Y.Z is
// cut, work under [Unreleased] goes with version.Kit "X.Y.(Z+1)-dev"
// (CHANGELOG.md, "Versioning").
const DevSuffix = "-dev"

// ParseKit reads a kit version: X.Y.Z (a release) or X.Y.Z-dev (the
// work towards X.Y.Z or a later version).
func ParseKit(s string) (v [3]int, dev bool, err error) {
	base, dev := strings.CutSuffix(s, DevSuffix)
	v, err = ParseSemver(base)
	if err != nil {
		return v, dev, fmt.Errorf("kit version %q is neither X.Y.Z nor X.Y.Z%s", s, DevSuffix)
	}
	return v, dev, nil
}

// KitProblems holds version.Kit (kit) to the changelog: a release X.Y.Z
// is the newest dated section, and [Unreleased] is empty, since once
// X.Y.Z is cut what comes after it is the work of a later version, which
// moves kit on to X.Y.(Z+1)-dev; a -dev kit is above every dated section
// (its release has not been cut). Each problem says how to mend it.
func (l *Log) KitProblems(kit string) []string {
	v, dev, err := ParseKit(kit)
	if err != nil {
		return []string{err.Error()}
	}
	rel, ok := l.NewestRelease()
	if !ok {
		return []string{"CHANGELOG.md has no dated section ## [X.Y.Z] - YYYY-MM-DD"}
	}
	last, _ := rel.Semver()
	var out []string
	if dev {
		if slices.Compare(v[:], last[:]) <= 0 {
			out = append(out, fmt.Sprintf("version.Kit %s is not above the newest release %s: the work after %s is %d.%d.%d%s", kit, rel.Name, rel.Name, last[0], last[1], last[2]+1, DevSuffix))
		}
		return out
	}
	if rel.Name != kit {
		out = append(out, fmt.Sprintf("version.Kit %s is not the newest dated section of CHANGELOG.md (%s): cut it with make cut VERSION=%s, or move Kit on to %d.%d.%d%s", kit, rel.Name, kit, last[0], last[1], last[2]+1, DevSuffix))
	}
	if top, _ := l.Newest(); !top.Released() && !top.Empty() && rel.Name == kit {
		out = append(out, fmt.Sprintf("CHANGELOG.md:%d: [Unreleased] holds changes while version.Kit is %s, a version already cut: set version.Kit (and js/kbcore/package.json) to %d.%d.%d%s (make cut VERSION=%d.%d.%d%s), or fold them into [%s] if it was never tagged", top.Line, kit, last[0], last[1], last[2]+1, DevSuffix, last[0], last[1], last[2]+1, DevSuffix, kit))
	}
	return out
}

// Find returns the version named name.
func (l *Log) Find(name string) (Version, bool) {
	for _, v := range l.Versions {
		if v.Name == name {
			return v, true
		}
	}
	return Version{}, false
}

// Notes is the body of the named version's section: its release notes.
func (l *Log) Notes(name string) (string, error) {
	v, ok := l.Find(name)
	if !ok {
		return "", fmt.Errorf("CHANGELOG.md has no section ## [%s]", name)
	}
	return strings.TrimSpace(v.Text) + "\n", nil
}
