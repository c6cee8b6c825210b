#!/usr/bin/env bash
# wasm-bench.sh — make wasm-bench: @kbkit/core's size, its cold load in
# Node and the cost per call of edit-text on a 100- and a 10,000-node page,
# side by side in one run with native Go (BenchmarkEditText of
# js/kbcore/wasm: kbcore.Apply, and the module's own apply function
# compiled natively) and with the Node example adapter's JavaScript
# edit-text (speckit/adapters/node); then where the time goes.
# Expects js/kbcore/kbcore.wasm (make wasm). OUT (default out) keeps
# wasm-bench-go.txt and wasm-bench.json. BENCHTIME for go test (1s).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
OUT=${OUT:-out}
mkdir -p "$OUT"
[ -s js/kbcore/kbcore.wasm ] || { echo "wasm-bench: js/kbcore/kbcore.wasm is missing (make wasm)" >&2; exit 2; }
go test ./js/kbcore/wasm -run '^$' -bench '^BenchmarkEditText$' -benchmem -benchtime="${BENCHTIME:-1s}" -count=1 >"$OUT/wasm-bench-go.txt" ||
	{ cat "$OUT/wasm-bench-go.txt" >&2; exit 1; }
node js/kbcore/bench/bench.mjs --go "$OUT/wasm-bench-go.txt" --json "$OUT/wasm-bench.json"
