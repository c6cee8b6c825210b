package release

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/subspace/kbkit/internal/changelog"
	"github.com/subspace/kbkit/internal/version"
)

// The copies of version.Kit that cannot read it say the same version: the
// npm package always, the pinned examples an implementer copies when Kit
// is a release (scripts/cut.sh moves them all).
func TestPinsAreVersionKit(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "js/kbcore/package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct{ Version string }
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	if pkg.Version != version.Kit {
		t.Errorf("js/kbcore/package.json: version %s, version.Kit %s", pkg.Version, version.Kit)
	}

	// The pins name a release: version.Kit, or the newest dated section of
	// the changelog while Kit is X.Y.Z-dev (CHANGELOG.md, "Versioning").
	pinned := version.Kit
	if _, dev, err := changelog.ParseKit(version.Kit); err != nil {
		t.Fatal(err)
	} else if dev {
		data, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
		if err != nil {
			t.Fatal(err)
		}
		log, err := changelog.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		rel, ok := log.NewestRelease()
		if !ok {
			t.Fatal("CHANGELOG.md has no dated section for the pins to name")
		}
		pinned = rel.Name
	}

	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	first := strings.Join(strings.SplitN(string(readme), "\n", 31)[:30], "\n")
	for _, want := range []string{"go install github.com/subspace/kbkit/cmd/kbkit@v" + pinned, "uses: subspace/kbkit@v" + pinned, "docs/ci.md"} {
		if !strings.Contains(first, want) {
			t.Errorf("README.md's first screen lacks %q", want)
		}
	}
	pin := regexp.MustCompile(`(?:kbkit@v|kbkit/cmd/kbkit@v|kbkit:|kbkit-|\bv=)(\d+\.\d+\.\d+)`)
	for _, f := range []string{"README.md", "docs/ci.md"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, m := range pin.FindAllStringSubmatch(string(b), -1) {
			n++
			if m[1] != pinned {
				t.Errorf("%s pins %q: the release to pin is %s (version.Kit %s)", f, m[0], pinned, version.Kit)
			}
		}
		if n == 0 {
			t.Errorf("%s pins no version", f)
		}
	}
}

// docs/ci.md names every input and output of the action.
func TestCIDocNamesTheActionsInputs(t *testing.T) {
	y, err := os.ReadFile(filepath.Join(root, "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var a struct{ Inputs, Outputs map[string]any }
	if err := yaml.Unmarshal(y, &a); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs/ci.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range []map[string]any{a.Inputs, a.Outputs} {
		for name := range set {
			if !strings.Contains(string(doc), "`"+name+"`") {
				t.Errorf("docs/ci.md does not name `%s`", name)
			}
		}
	}
}
