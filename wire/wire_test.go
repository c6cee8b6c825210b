package wire

import (
	"io/fs"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/subspace/kbkit/spec"
)

func section(t *testing.T, heading string) string {
	t.Helper()
	b, err := fs.ReadFile(spec.FS, "PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	_, s, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("PROTOCOL.md has no heading %q", heading)
	}
	if i := strings.Index(s, "\n## "); i >= 0 {
		s = s[:i]
	}
	return s
}

// TestSpecTables holds the package to spec/PROTOCOL.md: every error code
// of section 6 with its number and status, and every kb.limits field of
// section 8, no more and no fewer.
func TestSpecTables(t *testing.T) {
	row := regexp.MustCompile("^\\| `([A-Z_]+)` \\| (-?\\d+) \\| (\\d+) \\|")
	seen := map[string]bool{}
	for _, line := range strings.Split(section(t, "## 6. Errors"), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		rpc, _ := strconv.Atoi(m[2])
		status, _ := strconv.Atoi(m[3])
		seen[m[1]] = true
		if got, ok := Codes[m[1]]; !ok {
			t.Errorf("PROTOCOL.md 6 lists %s, Codes has no such code", m[1])
		} else if got != (CodeInfo{rpc, status}) {
			t.Errorf("%s: Codes has %+v, PROTOCOL.md 6 {%d %d}", m[1], got, rpc, status)
		}
	}
	for c := range Codes {
		if !seen[c] {
			t.Errorf("Codes has %s, which PROTOCOL.md 6 does not list", c)
		}
	}
	if len(seen) == 0 {
		t.Fatal("no code rows read from PROTOCOL.md 6")
	}

	var want []string
	field := regexp.MustCompile("`([a-z_]+)`")
	for _, line := range strings.Split(section(t, "## 8. Limits"), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(line, "|") {
			continue
		}
		for _, m := range field.FindAllStringSubmatch(cells[2], -1) {
			want = append(want, m[1])
		}
	}
	var got []string
	rt := reflect.TypeFor[Limits]()
	for i := range rt.NumField() {
		got = append(got, rt.Field(i).Tag.Get("json"))
	}
	sort.Strings(want)
	sort.Strings(got)
	if len(want) == 0 {
		t.Fatal("no kb.limits fields read from PROTOCOL.md 8")
	}
	if !slices.Equal(got, want) {
		t.Errorf("Limits has fields %v, PROTOCOL.md 8 lists %v", got, want)
	}
}
