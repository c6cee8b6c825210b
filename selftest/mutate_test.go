package selftest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

const sample = `package p

func f(a, b int) int {
	if a < b && b != 0 {
		return g(a, b)
	}
	a++
	for {
		break
	}
	return a + 1
}

func g(x, y int) int { return x - y }
`

// Each kind of edit is drawn from a small source, each mutant's edit
// parses, and signatures are unique.
func TestEnumerateFile(t *testing.T) {
	ms, err := enumerateFile("p.go", []byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	sigs := map[string]bool{}
	for _, m := range ms {
		kinds[m.Kind]++
		if sigs[m.Signature] {
			t.Errorf("duplicate signature %s", m.Signature)
		}
		sigs[m.Signature] = true
		out, err := m.Apply([]byte(sample))
		if err != nil {
			t.Fatal(err)
		}
		if string(out) == sample {
			t.Errorf("%s changes nothing", m.Signature)
		}
		if _, err := parser.ParseFile(token.NewFileSet(), "p.go", out, 0); err != nil {
			t.Errorf("%s does not parse: %v\n%s", m.Signature, err, out)
		}
	}
	for _, k := range []string{EditFlip, EditOffByOne, EditDropStmt, EditDropCond, EditSwapArgs, EditNegateIf, EditDropBreak} {
		if kinds[k] == 0 {
			t.Errorf("no %s mutant in %v", k, kinds)
		}
	}
	want := []string{
		"p.go:f:flip:<-><=#1", "p.go:f:flip:!=->==#1", "p.go:f:drop-cond:a < b && b != 0->a < b#1",
		"p.go:f:swap-args:a, b->b, a#1", "p.go:f:drop-stmt:a++->#1", "p.go:f:drop-break:break->#1",
		"p.go:f:off-by-one:1->2#1", "p.go:f:drop-break:return g(a, b)->#1",
	}
	for _, w := range want {
		if !sigs[w] {
			t.Errorf("no mutant %s", w)
		}
	}
	for s := range sigs {
		if strings.HasPrefix(s, "p.go:f:drop-break:return a + 1") {
			t.Errorf("the function's last return was dropped: %s", s)
		}
	}
}

// A sample is a permutation that depends on the seed only.
func TestSampleIsReplayable(t *testing.T) {
	ms, err := enumerateFile("p.go", []byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := Sample(ms, 1), Sample(ms, 1), Sample(ms, 2)
	same := func(x, y []Mutant) bool {
		for i := range x {
			if x[i].Signature != y[i].Signature {
				return false
			}
		}
		return true
	}
	if len(a) != len(ms) || !same(a, b) {
		t.Errorf("the same seed drew different samples")
	}
	if same(a, c) {
		t.Errorf("seeds 1 and 2 drew the same order")
	}
}

// The reviewed equivalents parse, each with a reason, and each names a
// mutant the engine draws today (a stale entry would judge nothing).
func TestEquivalentsAreCurrent(t *testing.T) {
	eq, err := Equivalents()
	if err != nil {
		t.Fatal(err)
	}
	root, err := FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	drawn := map[string]bool{}
	for _, a := range Areas {
		ms, err := Enumerate(root, a)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			drawn[m.Signature] = true
		}
	}
	for sig, reason := range eq {
		if !drawn[sig] {
			t.Errorf("equivalents.txt lists %s, which no area draws any more", sig)
		}
		if len(reason) < 20 {
			t.Errorf("%s: the reason %q says too little", sig, reason)
		}
	}
}

// The functions left out as diagnostics exist, draw no mutant while the
// rest of their file does, and are no part of the model: within their
// package (tests aside) only other diagnostics call them.
func TestDiagnosticsAreNotModel(t *testing.T) {
	root, err := FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	byDir := map[string]bool{}
	for key := range Diagnostics {
		file, _, _ := strings.Cut(key, ":")
		byDir[filepath.Dir(file)] = true
		ms, err := Enumerate(root, Area{Name: "x", Files: []string{file}})
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) == 0 {
			t.Fatalf("%s draws no mutant at all", file)
		}
		for _, m := range ms {
			if _, skip := Diagnostics[m.File+":"+m.Func]; skip {
				t.Errorf("a mutant of a diagnostic was drawn: %s", m.Signature)
			}
		}
	}
	declared := map[string]bool{}
	for dir := range byDir {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			rel, _ := filepath.Rel(root, path)
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range f.Decls {
				fd, ok := decl.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				caller := rel + ":" + funcName(fd)
				if _, ok := Diagnostics[caller]; ok {
					declared[caller] = true
				}
				ast.Inspect(fd.Body, func(n ast.Node) bool {
					id, ok := n.(*ast.Ident)
					if !ok {
						return true
					}
					for key := range Diagnostics {
						file, fn, _ := strings.Cut(key, ":")
						if filepath.Dir(file) != filepath.Dir(rel) || fn != id.Name {
							continue
						}
						if _, ok := Diagnostics[caller]; !ok {
							t.Errorf("%s, part of the model, uses the diagnostic %s", caller, key)
						}
					}
					return true
				})
			}
		}
	}
	for key := range Diagnostics {
		if !declared[key] {
			t.Errorf("Diagnostics lists %s, which is not declared there", key)
		}
	}
}

const messages = `package p

import "fmt"

func reject(code, format string, args ...any) error { return fmt.Errorf(format, args...) }

var errOrder = fmt.Errorf("order")

type rejection struct{ Message string }

func f(a, b string, r *rejection) error {
	r.Message = fmt.Sprintf("%s then %s", a, b)
	if a > b {
		return reject("order", "%q >= %q", a, b)
	}
	if a == "" {
		return fmt.Errorf("%w: %q and %q", errOrder, a, b)
	}
	return g(a, b)
}

func g(x, y string) error { return nil }
`

// A swap whose every change is inside a message's arguments is not drawn
// (message text is not behaviour); a swap that moves a rejection's code or
// a wrapped error, a swap elsewhere and every other edit of the calls are.
func TestEnumerateSkipsMessageText(t *testing.T) {
	ms, err := enumerateFile("p.go", []byte(messages))
	if err != nil {
		t.Fatal(err)
	}
	sigs := map[string]bool{}
	for _, m := range ms {
		sigs[m.Signature] = true
	}
	for _, s := range []string{
		`p.go:f:swap-args:a, b->b, a#1`,                               // g(a, b)
		`p.go:f:swap-args:"order", "%q >= %q"->"%q >= %q", "order"#1`, // the code moves
		`p.go:f:swap-args:"%w: %q and %q", errOrder->errOrder, "%w: %q and %q"#1`,
		`p.go:f:swap-args:errOrder, a->a, errOrder#1`,
		`p.go:f:negate-if:a > b->!(a > b)#1`,
		`p.go:f:drop-break:return reject("order", "%q >= %q", a, b)->#1`,
		`p.go:f:drop-stmt:r.Message = fmt.Sprintf("%s then %s", a, b)->#1`,
	} {
		if !sigs[s] {
			t.Errorf("no mutant %s", s)
		}
	}
	for _, s := range []string{
		`p.go:f:swap-args:"%s then %s", a->a, "%s then %s"#1`,
		`p.go:f:swap-args:"%q >= %q", a->a, "%q >= %q"#1`,
		`p.go:f:swap-args:a, b->b, a#2`, // any a, b but g's
	} {
		if sigs[s] {
			t.Errorf("%s only changes a message's text", s)
		}
	}
	if n := strings.Count(strings.Join(keys(sigs), "\n"), ":swap-args:"); n != 4 {
		t.Errorf("%d swap-args mutants, want 4: %v", n, keys(sigs))
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
