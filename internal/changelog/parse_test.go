package changelog

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	log, err := Parse([]byte("# Changelog\n\n## Versioning\n\n- `not/an-entry`: the head names no ids\n\n" +
		"## [Unreleased]\n\nspec_version: 3\n\n### Spec cases\n\n#### Added\n\nA group:\n\n- `a/b`, `a/c`: why, `not/this`\n\n" +
		"### Simulator checkers\n\n#### Removed\n\n- `gapless`: gone\n\n### What an implementer must do\n\n- `x/y` is no entry here\n\n" +
		"## [1.2.0] - 2026-12-07\n\nspec_version: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Versions) != 2 || log.Versions[0].SpecVersion != 3 || log.Versions[1].Name != "1.2.0" || log.Versions[1].Date != "2026-12-07" {
		t.Fatalf("versions %+v", log.Versions)
	}
	var got []string
	for _, e := range log.Versions[0].Entries {
		got = append(got, e.Kind+" "+e.Change+" "+e.ID)
	}
	if want := "case Added a/b|case Added a/c|checker Removed gapless"; strings.Join(got, "|") != want {
		t.Errorf("entries %q, want %q", strings.Join(got, "|"), want)
	}
	if !log.Named(KindChecker, Removed, "gapless") || log.Named(KindCase, Added, "not/this") {
		t.Error("Named")
	}
	if notes, err := log.Notes("1.2.0"); err != nil || notes != "spec_version: 2\n" {
		t.Errorf("Notes = %q, %v", notes, err)
	}
	for _, bad := range []string{
		"## [1.2] - 2026-12-07\n",
		"## [1.2.0]\n",
		"## [Unreleased] - 2026-12-07\n",
		"## [1.2.0] - 2026-12-07\n### Spec cases\n#### Fixed\n",
		"## [1.2.0] - 2026-12-07\n### Spec cases\n- `a/b`: no change named\n",
		"## [1.2.0] - 2026-12-07\n## Notes\n",
	} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// KitProblems: a kit version already cut with changes under [Unreleased]
// fails, and so does a kit that is neither the newest release nor a -dev
// version above it; the two states of the convention pass.
func TestKitProblems(t *testing.T) {
	const rel = "## [0.2.0] - 2026-12-20\n\nspec_version: 2\n\n## [0.1.0] - 2026-12-07\n\nspec_version: 2\n"
	const emptyTop = "## [Unreleased]\n\nspec_version: 2\n\n### Spec cases\n\n"
	const fullTop = "## [Unreleased]\n\nspec_version: 2\n\n### Added\n\n- a flag\n\n"
	for _, tc := range []struct {
		log, kit, want string // want: a word of the problem, "" for none
	}{
		{rel, "0.2.0", ""},
		{emptyTop + rel, "0.2.0", ""},
		{fullTop + rel, "0.2.1-dev", ""},
		{fullTop + rel, "0.3.0-dev", ""},
		{rel, "0.2.1-dev", ""},
		{fullTop + rel, "0.2.0", "[Unreleased] holds changes"},
		{rel, "0.1.0", "not the newest dated section"},
		{rel, "0.3.0", "not the newest dated section"},
		{fullTop + rel, "0.2.0-dev", "not above the newest release"},
		{rel, "0.2.1-rc.1", "neither X.Y.Z nor"},
		{fullTop, "0.1.0", "no dated section"},
	} {
		log, err := Parse([]byte(tc.log))
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(log.KitProblems(tc.kit), "; ")
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("kit %s under %q: problems %q, want %q", tc.kit, tc.log[:20], got, tc.want)
		}
	}
}

// Open: [Unreleased] when present; the newest version while the kit is
// that release (not tagged yet, perhaps); an [Unreleased] to write while
// the kit is -dev, so that no id lands in a version already cut.
func TestOpen(t *testing.T) {
	const rel = "## [0.2.0] - 2026-12-20\n\nspec_version: 2\n\n### Spec cases\n\n#### Added\n\n- `a/b`: new\n"
	for _, tc := range []struct {
		log, kit, want string
		names          bool // whether the open section names case a/b
	}{
		{rel, "0.2.0", "0.2.0", true},
		{rel, "0.2.1-dev", "Unreleased", false},
		{"## [Unreleased]\n\nspec_version: 2\n\n" + rel, "0.2.0", "Unreleased", false},
		{"## [Unreleased]\n\nspec_version: 2\n\n" + rel, "0.2.1-dev", "Unreleased", false},
	} {
		log, err := Parse([]byte(tc.log))
		if err != nil {
			t.Fatal(err)
		}
		v := log.Open(tc.kit)
		if v.Name != tc.want || v.Names(KindCase, Added, "a/b") != tc.names {
			t.Errorf("kit %s under %q: open %s (names a/b: %v), want %s (%v)", tc.kit, tc.log[:16], v.Name, !tc.names, tc.want, tc.names)
		}
	}
}
