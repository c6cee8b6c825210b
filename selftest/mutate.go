// Mutation engine: the single edits drawn from kbcore's areas (the Edit
// kinds below) and their signatures.
//
// Message text is not behaviour. A rejection's message and an error's text
// are free text (spec/README.md 2: "Codes are stable and normative;
// messages are free text"), so the engine draws no swap-args mutant whose
// every change lies inside the arguments that only word a message: those
// of a message call (messageCalls) from its format on, and those of a
// fmt.Sprintf assigned to a Message field. Such a swap is not counted in
// the signatures' #n either. Every other edit is still drawn: a swap that
// moves a rejection's code (reject's first argument), the error an
// fmt.Errorf wraps (a %w operand, or a format holding %w) or a format not
// written as a literal, and every flip, drop, negation or off-by-one in or
// around a message call, since those can change the code or the control
// flow.

package selftest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Areas are the parts of kbcore an implementation mirrors, each with the
// files (relative to the module root) its mutants are drawn from, in the
// order reports list them.
var Areas = []Area{
	{"apply", []string{"kbcore/apply.go"}},
	{"window", []string{"kbcore/window.go"}},
	{"planner", []string{"kbcore/plan.go"}},
	{"index", []string{"kbcore/index.go"}},
	{"tokenizer", []string{"kbcore/token/token.go", "kbcore/token/label.go", "kbcore/token/formula.go"}},
	{"ranks", []string{"kbcore/rank/rank.go"}},
	{"canonical form", []string{"kbcore/canonical.go"}},
}

// Diagnostics are the functions of the areas' files that are no part of
// the command model an implementation mirrors: code that only words the
// failure messages of the kit's own checks. No input of the model reaches
// them (nothing of the model calls them: TestDiagnosticsAreNotModel), so
// the engine draws no mutant from them, rather than listing each of their
// mutants as equivalent. Keyed by file:function, with the reason.
var Diagnostics = map[string]string{
	"kbcore/canonical.go:CanonicalMismatch": "words the failure of the byte-for-byte canonical checks of wiresuite and sim (which rule a difference breaks); the checks compare the bytes themselves",
	"kbcore/canonical.go:lastBackslash":     "a helper of CanonicalMismatch alone",
	"kbcore/canonical.go:hasPrefixAny":      "a helper of CanonicalMismatch alone",
	"kbcore/canonical.go:clip":              "a helper of CanonicalMismatch alone",
}

// Area is one part of kbcore and its source files.
type Area struct {
	Name  string
	Files []string
}

// The kinds of single edit the engine makes.
const (
	EditFlip      = "flip"       // a comparison flipped: < <=, > >=, == !=
	EditOffByOne  = "off-by-one" // an integer literal n made n+1
	EditDropStmt  = "drop-stmt"  // a statement (call, assignment, ++/--) dropped
	EditDropCond  = "drop-cond"  // one side of && or || dropped
	EditSwapArgs  = "swap-args"  // two adjacent arguments of a call swapped
	EditNegateIf  = "negate-if"  // an if's condition negated
	EditDropBreak = "drop-break" // a return, break or continue dropped
)

// Mutant is one single edit of one file of kbcore.
type Mutant struct {
	Area string `json:"area"`
	File string `json:"file"` // relative to the module root
	Line int    `json:"line"`
	Func string `json:"func"` // the enclosing function ("" at top level)
	Kind string `json:"kind"`
	Old  string `json:"old"` // the source text replaced
	New  string `json:"new"` // what replaces it
	// Signature names the mutant independently of line numbers: file,
	// function, kind, the edit and its occurrence among identical edits
	// of the function (the equivalents list keys on it).
	Signature string `json:"signature"`

	start, end int // byte offsets of Old in the file
}

// Edit describes the change for a reader: `old` -> `new`.
func (m Mutant) Edit() string {
	return fmt.Sprintf("%s: %s -> %s", m.Kind, oneLine(m.Old), oneLine(m.New))
}

// Apply returns src with the mutant's edit made.
func (m Mutant) Apply(src []byte) ([]byte, error) {
	if m.end > len(src) || string(src[m.start:m.end]) != m.Old {
		return nil, fmt.Errorf("%s: the source changed since the mutant was drawn", m.Signature)
	}
	out := make([]byte, 0, len(src)+len(m.New))
	out = append(out, src[:m.start]...)
	out = append(out, m.New...)
	return append(out, src[m.end:]...), nil
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

// Enumerate returns every mutant of the files of area under root, in
// source order.
func Enumerate(root string, area Area) ([]Mutant, error) {
	var out []Mutant
	for _, file := range area.Files {
		src, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			return nil, err
		}
		ms, err := enumerateFile(file, src)
		if err != nil {
			return nil, err
		}
		for i := range ms {
			ms[i].Area = area.Name
		}
		out = append(out, ms...)
	}
	return out, nil
}

// enumerateFile walks the function bodies of one file for the edit sites.
func enumerateFile(name string, src []byte) ([]Mutant, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []Mutant
	seen := map[string]int{}
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		fn := funcName(fd)
		if _, skip := Diagnostics[name+":"+fn]; skip {
			continue
		}
		add := func(kind string, start, end token.Pos, repl string) {
			s, e := fset.Position(start).Offset, fset.Position(end).Offset
			old := string(src[s:e])
			if old == repl {
				return
			}
			key := fmt.Sprintf("%s:%s:%s:%s->%s", name, fn, kind, oneLine(old), oneLine(repl))
			seen[key]++
			out = append(out, Mutant{File: name, Line: fset.Position(start).Line, Func: fn, Kind: kind,
				Old: old, New: repl, Signature: fmt.Sprintf("%s#%d", key, seen[key]), start: s, end: e})
		}
		text := func(n ast.Node) string {
			return string(src[fset.Position(n.Pos()).Offset:fset.Position(n.End()).Offset])
		}
		wording := messageArgs(fd.Body)
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BinaryExpr:
				if op, ok := flipped[n.Op]; ok {
					add(EditFlip, n.OpPos, n.OpPos+token.Pos(len(n.Op.String())), op.String())
				}
				if n.Op == token.LAND || n.Op == token.LOR {
					add(EditDropCond, n.Pos(), n.End(), text(n.X))
					add(EditDropCond, n.Pos(), n.End(), text(n.Y))
				}
			case *ast.BasicLit:
				if n.Kind == token.INT {
					if v, err := strconv.ParseInt(n.Value, 0, 64); err == nil && v < 1<<20 {
						add(EditOffByOne, n.Pos(), n.End(), strconv.FormatInt(v+1, 10))
					}
				}
			case *ast.CallExpr:
				for i := 0; i+1 < len(n.Args); i++ {
					if wording.holds(n.Args[i].Pos(), n.Args[i+1].End()) {
						continue // only a message's text changes
					}
					a, b := text(n.Args[i]), text(n.Args[i+1])
					if a != b && n.Ellipsis == token.NoPos {
						add(EditSwapArgs, n.Args[i].Pos(), n.Args[i+1].End(), b+", "+a)
					}
				}
			case *ast.IfStmt:
				add(EditNegateIf, n.Cond.Pos(), n.Cond.End(), "!("+text(n.Cond)+")")
			case *ast.BlockStmt:
				for _, st := range n.List {
					switch st := st.(type) {
					case *ast.ExprStmt, *ast.IncDecStmt:
						add(EditDropStmt, st.Pos(), st.End(), "")
					case *ast.AssignStmt:
						if st.Tok != token.DEFINE {
							add(EditDropStmt, st.Pos(), st.End(), "")
						}
					case *ast.BranchStmt:
						if st.Tok == token.BREAK || st.Tok == token.CONTINUE {
							add(EditDropBreak, st.Pos(), st.End(), "")
						}
					case *ast.ReturnStmt:
						// The function's own last return cannot go
						// without breaking the build.
						if n != fd.Body || st != n.List[len(n.List)-1] {
							add(EditDropBreak, st.Pos(), st.End(), "")
						}
					}
				}
			}
			return true
		})
	}
	return out, nil
}

// messageCalls are the calls whose arguments from an index on only word
// a message, keyed by callee, with the index of the first such argument
// (the format, where there is one).
var messageCalls = map[string]int{
	"fmt.Errorf": 0, // unless the swap moves what it wraps (messageArgs)
	"reject":     1, // kbcore: reject(code, format, args...); the code is normative
	"orderErr":   0, // kbcore/rank: wraps ErrOrder whatever its arguments
}

// spans are source ranges [start, end).
type spans [][2]token.Pos

// holds reports whether [start, end) lies within one of the spans.
func (s spans) holds(start, end token.Pos) bool {
	return slices.ContainsFunc(s, func(r [2]token.Pos) bool { return r[0] <= start && end <= r[1] })
}

// messageArgs returns the spans of body's source that only word a
// message: the arguments of messageCalls from their index on, and those
// of a fmt.Sprintf assigned to a Message field (kbcore is pure, so what
// they compute reaches nothing else). An fmt.Errorf counts only with a
// literal format, and from past its last %w operand (a format holding %w
// stays movable).
func messageArgs(body *ast.BlockStmt) spans {
	var out spans
	add := func(c *ast.CallExpr, from int) {
		if from < len(c.Args) {
			out = append(out, [2]token.Pos{c.Args[from].Pos(), c.Args[len(c.Args)-1].End()})
		}
	}
	sprintf := func(e ast.Expr) {
		if c, ok := e.(*ast.CallExpr); ok && callee(c) == "fmt.Sprintf" {
			add(c, 0)
		}
	}
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			from, ok := messageCalls[callee(n)]
			if !ok {
				return true
			}
			if callee(n) == "fmt.Errorf" {
				if from, ok = afterWrapped(n); !ok {
					return true
				}
			}
			add(n, from)
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				if sel, ok := l.(*ast.SelectorExpr); ok && sel.Sel.Name == "Message" && len(n.Rhs) == len(n.Lhs) {
					sprintf(n.Rhs[i])
				}
			}
		case *ast.KeyValueExpr:
			if k, ok := n.Key.(*ast.Ident); ok && k.Name == "Message" {
				sprintf(n.Value)
			}
		}
		return true
	})
	return out
}

// afterWrapped returns the index of the first argument of an fmt.Errorf
// call past the format and every %w operand; false when the format is no
// literal or numbers its operands ([n], *), so what it wraps is unknown.
func afterWrapped(c *ast.CallExpr) (int, bool) {
	if len(c.Args) == 0 {
		return 0, false
	}
	lit, ok := c.Args[0].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return 0, false
	}
	format, err := strconv.Unquote(lit.Value)
	if err != nil {
		return 0, false
	}
	from, operand := 0, 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		j := i + 1
		for j < len(format) && strings.IndexByte("+-# 0123456789.", format[j]) >= 0 {
			j++
		}
		if j == len(format) || format[j] == '[' || format[j] == '*' {
			return 0, false
		}
		if format[j] != '%' {
			operand++
			if format[j] == 'w' {
				from = operand + 1 // past the format and this operand
			}
		}
		i = j
	}
	return from, true
}

// callee is the text of a call's function: "f" or "pkg.F".
func callee(c *ast.CallExpr) string {
	switch f := c.Fun.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		if x, ok := f.X.(*ast.Ident); ok {
			return x.Name + "." + f.Sel.Name
		}
	}
	return ""
}

var flipped = map[token.Token]token.Token{
	token.LSS: token.LEQ, token.LEQ: token.LSS, token.GTR: token.GEQ, token.GEQ: token.GTR,
	token.EQL: token.NEQ, token.NEQ: token.EQL,
}

func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	star := ""
	if s, ok := t.(*ast.StarExpr); ok {
		star, t = "*", s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return "(" + star + id.Name + ")." + fd.Name.Name
	}
	return fd.Name.Name
}

// Sample returns the mutants of all in a replayable order drawn from
// seed: a shuffle that interleaves the kinds of edit, so that the first n
// are a spread sample of the area.
func Sample(all []Mutant, seed uint64) []Mutant {
	out := slices.Clone(all)
	slices.SortFunc(out, func(a, b Mutant) int { return strings.Compare(a.Signature, b.Signature) })
	r := rand.New(rand.NewPCG(seed, 0x6b626b6974))
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}
