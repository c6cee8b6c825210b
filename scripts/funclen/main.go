// Command funclen lists the functions of Go files longer than a limit, from
// the line of `func` to the closing brace (function literals too, each
// counted on its own as well as inside its enclosing function).
// scripts/ci-layout.sh runs it on cmd/, which holds flags and wiring only.
//
//	go run ./scripts/funclen -max 100 FILE...
//
// It prints FILE:LINE: NAME is N lines for each and exits 1.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
)

func main() {
	max := flag.Int("max", 100, "the most lines a function may take")
	flag.Parse()
	long, err := check(flag.Args(), *max)
	for _, l := range long {
		fmt.Println(l)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "funclen:", err)
		os.Exit(2)
	}
	if len(long) > 0 {
		os.Exit(1)
	}
}

// check returns "FILE:LINE: NAME is N lines" for each function of files
// longer than max lines.
func check(files []string, max int) ([]string, error) {
	var long []string
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			return long, err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var body *ast.BlockStmt
			what := "a function literal"
			switch x := n.(type) {
			case *ast.FuncDecl:
				body, what = x.Body, x.Name.Name
			case *ast.FuncLit:
				body = x.Body
			}
			if body == nil {
				return true
			}
			start := fset.Position(n.Pos()).Line
			if lines := fset.Position(body.End()).Line - start + 1; lines > max {
				long = append(long, fmt.Sprintf("%s:%d: %s is %d lines (at most %d)", name, start, what, lines, max))
			}
			return true
		})
	}
	return long, nil
}
