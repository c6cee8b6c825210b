// Package recipe holds the test that walks docs/adding-a-command.md: it
// adds a throwaway command type with node state, set-collapsed, to a copy
// of the module by the recipe's edits (testdata/set-collapsed.patch, one
// hunk per step, plus `go generate ./spec/schema`), and runs `kbkit spec
// run`, the type's protocol check and a short `kbkit conformance run`
// there. Nothing outside its test uses it.
package recipe
