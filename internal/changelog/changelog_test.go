package changelog_test

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/subspace/kbkit/internal/changelog"
	"github.com/subspace/kbkit/internal/version"
	"github.com/subspace/kbkit/sim"
	"github.com/subspace/kbkit/speckit/cases"
	"github.com/subspace/kbkit/wiresuite"
)

//go:generate go test -run TestIDsNamedInChangelog -update .

var update = flag.Bool("update", false, "rewrite spec/ids.txt from the code and the spec, once CHANGELOG.md names every id added or removed")

var (
	changelogPath = filepath.Join("..", "..", "CHANGELOG.md")
	snapshotPath  = filepath.Join("..", "..", "spec", "ids.txt")
)

// ids maps a kind to its ids.
type ids map[string][]string

// derive lists the ids the code and the spec define now: the built-in
// spec's case ids, the wire suite's check ids and the simulator's
// checkers.
func derive(t *testing.T) ids {
	t.Helper()
	all, err := cases.Open()
	if err != nil {
		t.Fatal(err)
	}
	out := ids{}
	for _, c := range all {
		out[changelog.KindCase] = append(out[changelog.KindCase], c.ID)
	}
	for _, c := range wiresuite.Checks() {
		out[changelog.KindCheck] = append(out[changelog.KindCheck], c.ID)
	}
	out[changelog.KindChecker] = slices.Clone(sim.Checkers)
	for k := range out {
		sort.Strings(out[k])
	}
	return out
}

const snapshotHead = `# The ids kbkit's reports use, one "kind id" a line: spec cases (case),
# protocol checks (check) and simulator checkers (checker). Generated from
# the code and the spec by go generate ./internal/changelog (go test
# ./internal/changelog -run TestIDsNamedInChangelog -update), which writes
# it only once CHANGELOG.md names every id added or removed. Do not edit.
`

func format(x ids) []byte {
	var b bytes.Buffer
	b.WriteString(snapshotHead)
	for _, k := range changelog.Kinds {
		for _, id := range x[k] {
			fmt.Fprintf(&b, "%s %s\n", k, id)
		}
	}
	return b.Bytes()
}

func readSnapshot(t *testing.T) (ids, bool) {
	t.Helper()
	data, err := os.ReadFile(snapshotPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	out := ids{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		kind, id, ok := strings.Cut(line, " ")
		if !ok || !slices.Contains(changelog.Kinds, kind) || id == "" {
			t.Fatalf("spec/ids.txt:%d: %q is not \"kind id\" (kind one of %v)", n, line, changelog.Kinds)
		}
		out[kind] = append(out[kind], id)
	}
	return out, true
}

func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func readLog(t *testing.T) *changelog.Log {
	t.Helper()
	data, err := os.ReadFile(changelogPath)
	if err != nil {
		t.Fatal(err)
	}
	log, err := changelog.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return log
}

// TestIDsNamedInChangelog: the ids of the code and the spec are those of
// the snapshot spec/ids.txt, and every id added to or removed from it is
// named in CHANGELOG.md (under Added or Removed, in its kind's list).
// -update rewrites the snapshot once the changelog names them.
func TestIDsNamedInChangelog(t *testing.T) {
	log := readLog(t)
	live := derive(t)
	snap, ok := readSnapshot(t)
	if !ok {
		if !*update {
			t.Fatalf("no spec/ids.txt: run go generate ./internal/changelog")
		}
		writeSnapshot(t, live)
		return
	}
	// A change is named in the open section only ([Unreleased], or the
	// newest version while Kit is still that version): an id added to or
	// removed from a version already cut would change what its pin means.
	newest := log.Open(version.Kit)
	var unnamed, diff []string
	for _, k := range changelog.Kinds {
		for _, id := range minus(live[k], snap[k]) {
			diff = append(diff, "+"+k+" "+id)
			if !newest.Names(k, changelog.Added, id) {
				unnamed = append(unnamed, fmt.Sprintf("%s %s (added)", k, id))
			}
		}
		for _, id := range minus(snap[k], live[k]) {
			diff = append(diff, "-"+k+" "+id)
			if !newest.Names(k, changelog.Removed, id) {
				unnamed = append(unnamed, fmt.Sprintf("%s %s (removed)", k, id))
			}
		}
	}
	if len(unnamed) > 0 {
		t.Errorf("CHANGELOG.md's open section, ## [%s], does not name these ids under Added or Removed of their kind:\n  %s\n"+
			"name each under ## [Unreleased] (add that section on top if there is none; never under a version already cut), "+
			"then regenerate spec/ids.txt with go generate ./internal/changelog", newest.Name, strings.Join(unnamed, "\n  "))
	}
	switch {
	case len(diff) == 0:
	case *update && len(unnamed) == 0:
		writeSnapshot(t, live)
	case *update:
		t.Errorf("spec/ids.txt not written: name the ids above in CHANGELOG.md first")
	default:
		t.Errorf("the ids differ from spec/ids.txt:\n  %s\nname them in CHANGELOG.md and run go generate ./internal/changelog", strings.Join(diff, "\n  "))
	}
	if !*update {
		if data, _ := os.ReadFile(snapshotPath); len(diff) == 0 && !bytes.Equal(data, format(live)) {
			t.Errorf("spec/ids.txt is not as go generate ./internal/changelog writes it (edited by hand?)")
		}
	}
}

func writeSnapshot(t *testing.T, live ids) {
	t.Helper()
	if err := os.WriteFile(snapshotPath, format(live), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", snapshotPath)
}

// TestChangelogNamesRealIDs: an id a version names as added or changed
// exists (unless a newer version removed it), and one it names as removed
// does not (unless a newer version added it again): a typo in the
// changelog is found.
func TestChangelogNamesRealIDs(t *testing.T) {
	log := readLog(t)
	live := derive(t)
	for i, v := range log.Versions {
		newer := &changelog.Log{Versions: log.Versions[:i]}
		for _, e := range v.Entries {
			exists := slices.Contains(live[e.Kind], e.ID)
			switch e.Change {
			case changelog.Added, changelog.Changed:
				if !exists && !newer.Named(e.Kind, changelog.Removed, e.ID) {
					t.Errorf("CHANGELOG.md:%d: %s %s %s: no such %s", e.Line, v.Name, strings.ToLower(e.Change), e.ID, e.Kind)
				}
			case changelog.Removed:
				if exists && !newer.Named(e.Kind, changelog.Added, e.ID) {
					t.Errorf("CHANGELOG.md:%d: %s removed %s: the %s still exists", e.Line, v.Name, e.ID, e.Kind)
				}
			}
		}
	}
}

// TestChangelogVersions holds the changelog to its versioning rules:
// versions newest first, each stating its spec_version; version.Kit is
// the newest dated section with [Unreleased] empty, or X.Y.Z-dev above it
// (changelog.KitProblems); the newest section states version.Spec; a version that raises
// spec_version raises kbkit's major version (before 1.0.0 the minor) and
// says what an implementer must do; one that does not names only ids that
// cannot fail anyone.
func TestChangelogVersions(t *testing.T) {
	log := readLog(t)
	if len(log.Versions) == 0 {
		t.Fatal("CHANGELOG.md has no version")
	}
	for _, p := range log.KitProblems(version.Kit) {
		t.Error(p)
	}
	if got := log.Versions[0].SpecVersion; got != version.Spec {
		t.Errorf("the newest section (%s) states spec_version %d, the spec is %d (version.Spec)", log.Versions[0].Name, got, version.Spec)
	}
	for i, v := range log.Versions {
		if v.SpecVersion == 0 {
			t.Errorf("CHANGELOG.md:%d: %s states no spec_version (a line spec_version: N)", v.Line, v.Name)
		}
		if i > 0 && !v.Released() {
			t.Errorf("CHANGELOG.md:%d: Unreleased is not on top", v.Line)
		}
		if i+1 == len(log.Versions) {
			continue
		}
		old := log.Versions[i+1]
		if !old.Released() {
			continue
		}
		if v.Released() {
			a, _ := v.Semver()
			b, _ := old.Semver()
			if !semverLess(b, a) || v.Date < old.Date {
				t.Errorf("CHANGELOG.md:%d: %s (%s) is not newer than the %s (%s) below it", v.Line, v.Name, v.Date, old.Name, old.Date)
			}
			if v.SpecVersion > old.SpecVersion && !majorBump(b, a) {
				t.Errorf("CHANGELOG.md:%d: %s raises spec_version to %d but not kbkit's major version (before 1.0.0 the minor) over %s", v.Line, v.Name, v.SpecVersion, old.Name)
			}
		}
		switch {
		case v.SpecVersion < old.SpecVersion:
			t.Errorf("CHANGELOG.md:%d: %s states spec_version %d, below %s's %d", v.Line, v.Name, v.SpecVersion, old.Name, old.SpecVersion)
		case v.SpecVersion > old.SpecVersion:
			if !strings.Contains(v.Text, "\n### What an implementer must do\n") {
				t.Errorf("CHANGELOG.md:%d: %s raises spec_version and has no ### What an implementer must do", v.Line, v.Name)
			}
		default:
			for _, e := range v.Entries {
				if !strings.Contains(e.Text, "cannot fail") {
					t.Errorf("CHANGELOG.md:%d: %s %s %s at the spec_version of %s: raise spec_version, or say why it cannot fail anyone (\"cannot fail\")", e.Line, v.Name, strings.ToLower(e.Change), e.ID, old.Name)
				}
			}
		}
	}
}

func semverLess(a, b [3]int) bool { return slices.Compare(a[:], b[:]) < 0 }

// majorBump: b's major is above a's, or, both before 1.0.0, b's minor.
func majorBump(a, b [3]int) bool {
	if a[0] == 0 && b[0] == 0 {
		return b[1] > a[1]
	}
	return b[0] > a[0]
}
