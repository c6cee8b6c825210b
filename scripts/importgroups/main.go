// Command importgroups checks the import blocks of Go files as goimports
// writes them: the standard library's imports in a group of their own,
// never in one group with a module's (gofmt allows the mix, goimports does
// not). scripts/ci-layout.sh runs it on every tracked Go file.
//
//	go run ./scripts/importgroups FILE...
//
// It prints FILE:LINE for each group that mixes the two and exits 1.
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
)

func main() {
	bad, err := check(os.Args[1:])
	for _, b := range bad {
		fmt.Println(b)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "importgroups:", err)
		os.Exit(2)
	}
	if len(bad) > 0 {
		os.Exit(1)
	}
}

// check returns "FILE:LINE: ..." for each import group of files that holds
// both a standard-library path and another.
func check(files []string) ([]string, error) {
	var bad []string
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			return bad, err
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.IMPORT || !g.Lparen.IsValid() {
				continue
			}
			bad = append(bad, mixedGroups(fset, name, g)...)
		}
	}
	return bad, nil
}

// mixedGroups splits an import block into its groups (runs of lines
// without a blank line between them) and reports the mixed ones.
func mixedGroups(fset *token.FileSet, name string, g *ast.GenDecl) []string {
	var bad []string
	var std, other bool
	start, last := 0, -1
	flush := func() {
		if std && other {
			bad = append(bad, fmt.Sprintf("%s:%d: the standard library's imports share a group with a module's (run goimports)", name, start))
		}
		std, other = false, false
	}
	for _, s := range g.Specs {
		spec := s.(*ast.ImportSpec)
		from := fset.Position(spec.Pos()).Line
		if spec.Doc != nil {
			from = fset.Position(spec.Doc.Pos()).Line
		}
		if last >= 0 && from > last+1 {
			flush()
		}
		if !std && !other {
			start = from
		}
		path, _ := strconv.Unquote(spec.Path.Value)
		if isStd(path) {
			std = true
		} else {
			other = true
		}
		last = fset.Position(spec.End()).Line
	}
	flush()
	return bad
}

// isStd reports whether path is the standard library's: its first element
// has no dot (as goimports decides).
func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}
