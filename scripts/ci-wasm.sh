#!/usr/bin/env bash
# ci-wasm.sh — kbcore as WebAssembly (@kbkit/core, js/kbcore) through the
# path a consumer takes:
#
#  1. make wasm (GOOS=wasip1 reactor); fails past 1.5 MB gzipped
#  2. npm pack js/kbcore; npm install of the tarball into a scratch
#     project (offline: the package has no dependencies)
#  3. the scratch project imports "@kbkit/core" by name and applies a
#     command; js/kbcore/test passes (node --test); the README's example (js/kbcore/example/example.mjs, which
#     the README must show as it is) runs and prints what it says;
#     example/typecheck.ts type-checks (tsc --strict, typescript from npm)
#  4. kbkit spec run --impl "node node_modules/@kbkit/core/adapter.mjs":
#     every case of every suite passes, none skipped
#  5. TestDifferential (js/kbcore/wasm) against the installed adapter:
#     DIFF_N generated inputs of each kind (default 1000), 0 differences
#     from native kbcore; every reply of the adapter to every spec case
#     validates against spec/schema/adapter; kbkit spec fuzz through it
#     (FUZZ_N inputs, default 4000): 0 differences from the reference
#  6. headless Chromium opens js/kbcore/example/index.html served from the
#     scratch project on loopback; browsercheck checks the rendered DOM
#
# Needs Go, Node.js 20+ with npm, and chromium (installed with apt-get,
# as root, when missing). Any failure exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
ROOT=$PWD

. scripts/lib/ci.sh
ci_begin ci-wasm
SERVER_PID=
ci_on_exit() {
	if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
}

command -v node >/dev/null && command -v npm >/dev/null || die "node and npm are needed"
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 20 ] || die "node $(node --version): @kbkit/core needs Node.js 20 or later"
. scripts/lib/chrome.sh

# --- 1. the module ---
t0=$(date +%s)
make -s wasm >&2 || die "make wasm failed"
WASM=js/kbcore/kbcore.wasm
gz=$(gzip -9c "$WASM" | wc -c)
say "kbcore.wasm: $(wc -c <"$WASM") bytes, $gz gzipped ($(( $(date +%s) - t0 ))s)"
[ "$gz" -le 1572864 ] || die "kbcore.wasm is $gz bytes gzipped, over the 1.5 MB target"
go build -o "$WORK/kbkit" ./cmd/kbkit || die "go build ./cmd/kbkit failed"
go build -o "$WORK/browsercheck" ./scripts/browsercheck || die "go build ./scripts/browsercheck failed"

# --- 2. pack and install ---
(cd js/kbcore && npm pack --silent --pack-destination "$WORK" >"$WORK/pack.txt" 2>"$WORK/pack.log") || { cat "$WORK/pack.log" >&2; die "npm pack failed"; }
TGZ=$WORK/$(tail -n 1 "$WORK/pack.txt")
[ -s "$TGZ" ] || die "npm pack wrote no tarball"
tar -tzf "$TGZ" >"$WORK/tgz.txt" || die "the tarball does not read"
for f in kbcore.mjs kbcore.d.ts kbcore.wasm adapter.mjs types/kbkit.d.ts README.md; do
	grep -qx "package/$f" "$WORK/tgz.txt" || die "the tarball has no $f"
done
P=$WORK/project
mkdir -p "$P"
(cd "$P" && npm init -y >/dev/null && npm install --offline --no-audit --no-fund --silent "$TGZ" >"$WORK/install.log" 2>&1) ||
	{ cat "$WORK/install.log" >&2; die "npm install of the tarball failed"; }
say "packed $(basename "$TGZ") ($(wc -c <"$TGZ") bytes) and installed it into a scratch project"

# --- 3. the package by name ---
cat >"$P/smoke.mjs" <<'JS'
import { apply, rankBetween } from "@kbkit/core";
const doc = { nodes: [], page: { id: "p1", title: "Budget", aliases: [], dir: "", merged_into: null } };
const r = apply(doc, { id: "c1", type: "create-after", payload: { node: "n1", text: "cash: $5" } });
if (r.rejected || r.doc.nodes[0].text !== "cash: $5" || r.index.n1.label.number !== 5) throw new Error(JSON.stringify(r));
if (!(rankBetween("a0", "a1") > "a0")) throw new Error("rankBetween");
console.log("ok");
JS
(cd "$P" && node smoke.mjs) >"$WORK/smoke.txt" 2>&1 && grep -qx ok "$WORK/smoke.txt" ||
	{ cat "$WORK/smoke.txt" >&2; die "importing @kbkit/core by name in the scratch project"; }
# The module's own tests (errors, the Window's lifecycle, text forms).
cp -r js/kbcore/test "$P/test"
(cd "$P" && node --test test/) >"$WORK/node-test.txt" 2>&1 || { cat "$WORK/node-test.txt" >&2; die "node --test js/kbcore/test against the installed package"; }
say "node --test: $(grep -E '^# (pass|fail) ' "$WORK/node-test.txt" | tr '\n' ' ')"
# The README's ten-line example, as committed, and that the README shows it.
cp js/kbcore/example/example.mjs "$P/example.mjs"
(cd "$P" && node example.mjs) >"$WORK/example.txt" 2>&1 || { cat "$WORK/example.txt" >&2; die "js/kbcore/example/example.mjs failed"; }
for want in '"number":610000' 'link:Q1 plan tag:todo' "[ 'send:c2' ] cash: \$5"; do
	grep -qF -- "$want" "$WORK/example.txt" || { cat "$WORK/example.txt" >&2; die "the example's output lacks $want"; }
done
node -e 'const fs = require("fs"); const ex = fs.readFileSync(process.argv[1], "utf8"), md = fs.readFileSync(process.argv[2], "utf8");
if (!md.includes(ex.trimEnd())) { console.error("js/kbcore/README.md does not show example/example.mjs as it is"); process.exit(1); }' \
	js/kbcore/example/example.mjs js/kbcore/README.md || die "the README's example"

# The types: a strict TypeScript consumer (typescript pinned as in
# speckit/adapters/typescript, from the npm registry).
t0=$(date +%s)
TS=$(node -p 'require("./speckit/adapters/typescript/package.json").devDependencies.typescript')
cp js/kbcore/example/typecheck.ts "$P/typecheck.ts"
cat >"$P/tsconfig.json" <<'JSON'
{"compilerOptions": {"strict": true, "noEmit": true, "module": "nodenext", "moduleResolution": "nodenext", "target": "es2022"}, "files": ["typecheck.ts"]}
JSON
(cd "$P" && npm install --no-audit --no-fund --silent "typescript@$TS" >"$WORK/ts.log" 2>&1 && npx tsc -p . >>"$WORK/ts.log" 2>&1) ||
	{ cat "$WORK/ts.log" >&2; die "type-checking example/typecheck.ts against the installed package (typescript $TS)"; }
say "example/typecheck.ts type-checks against the installed package with typescript $TS ($(( $(date +%s) - t0 ))s)"

# --- 4. every case through the installed package's adapter ---
t0=$(date +%s)
rc=0
(cd "$P" && "$WORK/kbkit" spec run --impl "node node_modules/@kbkit/core/adapter.mjs" >"$WORK/spec.tap" 2>"$WORK/spec.err") || rc=$?
summary=$(grep -E '^# [0-9]+ cases:' "$WORK/spec.tap" || true)
[ "$rc" = 0 ] || { grep -E '^not ok' "$WORK/spec.tap" | head -20 >&2; cat "$WORK/spec.err" >&2; die "kbkit spec run exited $rc: $summary"; }
total=$(sed -nE 's/^# ([0-9]+) cases:.*/\1/p' <<<"$summary")
passed=$(sed -nE 's/.* ([0-9]+) passed.*/\1/p' <<<"$summary")
[ -n "$total" ] && [ "$total" = "$passed" ] || die "not every case passed: $summary"
! grep -qiE '# (skip|todo)' "$WORK/spec.tap" || die "cases were skipped: $summary"
say "kbkit spec run: $summary, none skipped ($(( $(date +%s) - t0 ))s)"

# --- 5. differential against native kbcore ---
t0=$(date +%s)
KBKIT_REQUIRE_WASM=1 go test ./js/kbcore/wasm -count=1 -run '^TestDifferential$' -v \
	-args -diff.n="${DIFF_N:-1000}" -diff.adapter="$P/node_modules/@kbkit/core/adapter.mjs" >"$WORK/diff.txt" 2>&1 ||
	{ tail -n 40 "$WORK/diff.txt" >&2; die "the differential test"; }
grep -E 'generated inputs|applied' "$WORK/diff.txt" | sed 's/^ *diff_test.go:[0-9]*: //' >&2
say "differential test ($(( $(date +%s) - t0 ))s)"
t0=$(date +%s)
(cd "$P" && "$WORK/kbkit" spec fuzz --impl "node node_modules/@kbkit/core/adapter.mjs" --seed 1 --count "${FUZZ_N:-4000}" >"$WORK/fuzz.txt" 2>&1) ||
	{ tail -n 60 "$WORK/fuzz.txt" >&2; die "kbkit spec fuzz found a difference (or could not run)"; }
say "kbkit spec fuzz: $(grep -E '^[0-9]+ inputs' "$WORK/fuzz.txt") ($(( $(date +%s) - t0 ))s)"
KBKIT_REQUIRE_WASM=1 go test ./speckit/adapter -count=1 -run '^TestWasmAdapterRepliesMatchSchemas$' >"$WORK/schema.txt" 2>&1 ||
	{ tail -n 30 "$WORK/schema.txt" >&2; die "the adapter's replies against spec/schema/adapter"; }
say "every reply of the adapter validates against spec/schema/adapter"

# --- 6. the example page in headless Chromium ---
t0=$(date +%s)
cp js/kbcore/example/index.html "$P/index.html"
node js/kbcore/example/serve.mjs "$P" >"$WORK/url.txt" 2>"$WORK/serve.log" &
SERVER_PID=$!
for _ in $(seq 100); do [ -s "$WORK/url.txt" ] && break; sleep 0.1; done
URL=$(head -n 1 "$WORK/url.txt")
[ -n "$URL" ] || { cat "$WORK/serve.log" >&2; die "the page's loopback server did not start"; }
"$WORK/browsercheck" dom-when "$CHROME" "${URL}index.html" 'document.getElementById("status").dataset.ok' "$WORK/dom.html" ||
	die "chromium did not finish the example page"
"$WORK/browsercheck" wasm "$WORK/dom.html" >&2 || die "the example page's rendered DOM"
say "example page in $("$CHROME" --version 2>/dev/null | head -n 1) ($(( $(date +%s) - t0 ))s)"

say "passed in $(( $(date +%s) - START ))s"
