// Package benchdoc builds the page kbkit's reducer benchmarks edit (the
// native ones in kbcore, the WebAssembly ones of make wasm-bench, whose
// js/kbcore/bench/bench.mjs builds the same page): groups of 100 nodes,
// one top-level node each with 99 children, text with a link and a tag,
// so that lookups, neighbours and moves are realistic.
package benchdoc
