#!/usr/bin/env bash
# ci-matrix.sh — the spec results matrix of three implementations in a
# real browser:
#
#  1. go build ./cmd/kbkit and ./scripts/browsercheck; npm ci and tsc the
#     TypeScript adapter skeleton (speckit/adapters/typescript);
#  2. kbkit spec matrix over the reference, the Node example
#     (speckit/adapters/node) and the TypeScript skeleton, each with
#     its expectations file: exit 0, and --json, --badges;
#  3. the same three and the deliberately broken Node adapter, compared
#     with the first matrix (--compare): exit 1 (broken fails), its page;
#  4. headless Chromium (Debian's chromium, installed if missing) opens
#     that page at the Node row's commands cell: browsercheck checks the
#     dumped DOM (a row per implementation with its tier and a cell per
#     suite, the linked drill-down opened by the page's script, the broken
#     adapter's failing cases with coloured diff lines, the changes) and
#     that the screenshot is not blank.
#
# KBKIT_SCREENSHOTS=DIR keeps matrix.png and matrix.html. Needs Go, Node.js
# 18+ and npm (the npm registry), and apt (as root) when chromium is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

. scripts/lib/ci.sh
ci_begin ci-matrix
for t in go node npm; do
	command -v "$t" >/dev/null 2>&1 || die "$t is required"
done
. scripts/lib/chrome.sh

go build -o "$WORK/kbkit" ./cmd/kbkit || die "go build ./cmd/kbkit failed"
go build -o "$WORK/browsercheck" ./scripts/browsercheck || die "go build ./scripts/browsercheck failed"
TS=speckit/adapters/typescript
(cd "$TS" && npm ci --no-audit --no-fund --loglevel=error && rm -rf build && npx --no-install tsc -p .) ||
	die "building the TypeScript skeleton failed"
NODE=speckit/adapters/node
THREE=(--reference
	--impl "node=node $NODE/adapter.mjs" --expect "node=$NODE/expectations.yaml"
	--impl "typescript=node $TS/build/adapter.js" --expect "typescript=$TS/expectations.yaml")

t0=$(date +%s)
"$WORK/kbkit" spec matrix "${THREE[@]}" --json "$WORK/three.json" --badges "$WORK/badges" \
	>"$WORK/three.txt" 2>"$WORK/three.err" || { cat "$WORK/three.txt" "$WORK/three.err" >&2; die "spec matrix of the three exited non-zero"; }
cat "$WORK/three.txt" >&2
for b in reference node typescript; do
	grep -q '"schemaVersion":1,"label":"kbkit spec"' "$WORK/badges/$b.json" || die "no shields.io endpoint for $b"
done
grep -q '"message":"complete · ' "$WORK/badges/reference.json" || die "the reference is not complete: $(cat "$WORK/badges/reference.json")"

rc=0
"$WORK/kbkit" spec matrix "${THREE[@]}" --impl "broken=node speckit/adapters/broken/adapter.mjs" \
	--compare "$WORK/three.json" --html "$WORK/matrix.html" >"$WORK/four.txt" 2>"$WORK/four.err" || rc=$?
[ "$rc" = 1 ] || { cat "$WORK/four.txt" "$WORK/four.err" >&2; die "spec matrix with the broken adapter exited $rc, want 1"; }
say "two matrices in $(( $(date +%s) - t0 ))s; the page is $(wc -c <"$WORK/matrix.html") bytes"

OPEN=impl-1-commands # the Node row's commands cell
chrome --window-size=1200,1400 --dump-dom "file://$WORK/matrix.html#$OPEN" >"$WORK/matrix-dom.html" || die "chromium --dump-dom of the matrix failed"
"$WORK/browsercheck" matrix "$WORK/matrix-dom.html" "$OPEN" reference=complete node=partial typescript=partial broken=failing >&2 ||
	die "the matrix's rendered DOM"
chrome --window-size=1200,1400 --screenshot="$WORK/matrix.png" "file://$WORK/matrix.html" >/dev/null || die "chromium --screenshot of the matrix failed"
"$WORK/browsercheck" png "$WORK/matrix.png" >&2 || die "the matrix's screenshot"
if [ -n "${KBKIT_SCREENSHOTS:-}" ]; then
	mkdir -p "$KBKIT_SCREENSHOTS"
	cp "$WORK/matrix.png" "$WORK/matrix.html" "$KBKIT_SCREENSHOTS/"
fi
say "passed in $(( $(date +%s) - START ))s"
