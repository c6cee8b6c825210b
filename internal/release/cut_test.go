package release

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/subspace/kbkit/internal/changelog"
)

// cutFiles are the files scripts/cut.sh may write.
var cutFiles = []string{"internal/version/version.go", "js/kbcore/package.json", "CHANGELOG.md", "README.md", "docs/ci.md", "spec/ids.txt"}

// copyCheckout copies the checkout's files (tracked ones and new ones git
// does not ignore, as they are in the work tree) into a temporary
// directory: scripts/cut.sh runs there and never on the real tree.
func copyCheckout(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is needed to list the checkout's files")
	}
	dir := t.TempDir()
	cmd := exec.Command("bash", "-c", `git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done |
		tar --null -T - -cf - | tar -xf - -C "$1"`, "copy", dir)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("copying the checkout: %v\n%s", err, out)
	}
	return dir
}

// cut runs scripts/cut.sh version in dir.
func cut(t *testing.T, dir, version string) (code int, stdout, stderr string) {
	t.Helper()
	return runBash(t, dir, "scripts/cut.sh", version)
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range cutFiles {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		out[f] = string(b)
	}
	return out
}

// refuse: cut.sh version fails saying why and leaves every file as it was.
func refuse(t *testing.T, dir, version, why string) {
	t.Helper()
	before := snapshot(t, dir)
	code, out, errs := cut(t, dir, version)
	if code == 0 || out != "" || !strings.Contains(errs, why) {
		t.Errorf("cut %s: exit %d, stdout %q, stderr %q; want a refusal saying %q", version, code, out, errs, why)
	}
	for f, b := range snapshot(t, dir) {
		if b != before[f] {
			t.Errorf("cut %s was refused but changed %s", version, f)
		}
	}
}

func kitOf(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "internal/version/version.go"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(b), "\nconst Kit = \"")
	kit, _, _ := strings.Cut(rest, "\"")
	return kit
}

// make cut on a copy of the checkout: it refuses malformed and
// non-increasing versions and an empty [Unreleased], writing nothing;
// opens X.Y.Z-dev; cuts X.Y.Z, moving every copy of the version and
// dating the section; and prints the tag command without tagging.
func TestCut(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the changelog and pin tests of a copy of the checkout")
	}
	dir := copyCheckout(t)
	kit := kitOf(t, dir)
	if strings.HasSuffix(kit, "-dev") {
		t.Skipf("version.Kit is %s: the test starts from a release", kit)
	}
	v, err := changelog.ParseSemver(kit)
	if err != nil {
		t.Fatal(err)
	}
	next := func(d int) string { return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2]+d) }

	for _, bad := range []string{"", "v" + next(1), next(1) + "-rc.1", "1.2", "01.2.3"} {
		refuse(t, dir, bad, "neither X.Y.Z nor X.Y.Z-dev")
	}
	refuse(t, dir, kit, "is not above")
	refuse(t, dir, kit+"-dev", "is not above")

	// Open the next version: Kit and the npm package move, the pins do not.
	readme := snapshot(t, dir)["README.md"]
	if code, out, errs := cut(t, dir, next(1)+"-dev"); code != 0 || !strings.Contains(out, "git commit") {
		t.Fatalf("cut %s-dev: exit %d, stdout %q, stderr:\n%s", next(1), code, out, errs)
	}
	after := snapshot(t, dir)
	if kitOf(t, dir) != next(1)+"-dev" || !strings.Contains(after["js/kbcore/package.json"], `"version": "`+next(1)+`-dev"`) ||
		after["README.md"] != readme || !strings.Contains(after["CHANGELOG.md"], "\n## [Unreleased]\n") {
		t.Fatalf("after cut %s-dev: Kit %s, package.json or README wrong, or no [Unreleased]", next(1), kitOf(t, dir))
	}
	refuse(t, dir, next(1), "## [Unreleased] is empty")

	// Something to release, then the cut.
	cl := strings.Replace(after["CHANGELOG.md"], "## [Unreleased]\n", "## [Unreleased]\n\n### Commands and reports\n\n#### Added\n\n- a flag that cannot fail anyone\n", 1)
	if err := os.WriteFile(filepath.Join(dir, "CHANGELOG.md"), []byte(cl), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := cut(t, dir, next(1))
	if code != 0 || !strings.Contains(out, "git tag -a v"+next(1)+" ") {
		t.Fatalf("cut %s: exit %d, stdout %q, stderr:\n%s", next(1), code, out, errs)
	}
	after = snapshot(t, dir)
	today := time.Now().UTC().Format("2006-01-02")
	if kitOf(t, dir) != next(1) || !strings.Contains(after["js/kbcore/package.json"], `"version": "`+next(1)+`"`) ||
		!strings.Contains(after["CHANGELOG.md"], "\n## ["+next(1)+"] - ") || strings.Contains(after["CHANGELOG.md"], "\n## [Unreleased]") ||
		!strings.Contains(after["README.md"], "kbkit@v"+next(1)) || strings.Contains(after["README.md"], "kbkit@v"+kit) ||
		!strings.Contains(after["docs/ci.md"], "uses: subspace/kbkit@v"+next(1)) {
		t.Errorf("after cut %s (%s): Kit %s; a copy of the version or the changelog's section is not moved", next(1), today, kitOf(t, dir))
	}
	if tags, err := exec.Command("git", "-C", root, "tag", "-l", "v"+next(1)).Output(); err != nil || len(tags) != 0 {
		t.Errorf("the real checkout has a tag v%s (%v): cut.sh must not tag", next(1), err)
	}
	refuse(t, dir, next(1), "is not above")
}
