// Command gen rewrites the registry-derived parts of the spec (see
// spec/schema/generate.go) in the spec directory named by its argument.
//
//	go generate ./spec/schema
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/subspace/kbkit/spec/schema"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gen SPECDIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	files, err := schema.Generate(os.DirFS(dir))
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
		fmt.Println("gen: wrote", filepath.Join(dir, name))
	}
}
