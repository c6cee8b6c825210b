#!/usr/bin/env bash
# ci-ts-adapter.sh — the TypeScript adapter skeleton
# (speckit/adapters/typescript) on this machine's Node.js:
#
#  1. npm ci (the pinned typescript and @types/node) and tsc -p . there
#     (strict; its types come from spec/types/kbkit.d.ts);
#  2. kbkit spec run --impl "node .../build/adapter.js" with its
#     expectations file: exit 0, no failure, and its commands' cases passed;
#  3. the copy kbkit spec export writes compiles and runs the same way;
#  4. go test: its replies validate against spec/schema/adapter;
#  5. kbkit spec fuzz --expect, the ratchet both ways: the skeleton and
#     the Node example (speckit/adapters/node) with their expectations
#     files: exit 0; the broken Node adapter (speckit/adapters/broken)
#     with its file, which expects its bug by signature (edit-text/fuzz:doc):
#     exit 0, and without it: exit 1; the Node example with the broken
#     adapter's file: exit 1, the entry stale.
#
# Needs Go, Node.js 18+ and npm (the npm registry). About a minute warm.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

. scripts/lib/ci.sh
ci_begin ci-ts-adapter
for t in go node npm; do
	command -v "$t" >/dev/null 2>&1 || die "$t is required"
done

DIR=speckit/adapters/typescript
(cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error) || die "npm ci in $DIR failed"
(cd "$DIR" && rm -rf build && npx --no-install tsc -p .) || die "tsc -p $DIR failed"

go build -o "$WORK/kbkit" ./cmd/kbkit || die "go build ./cmd/kbkit failed"
rc=0
"$WORK/kbkit" spec run --impl "node $DIR/build/adapter.js" --expect "$DIR/expectations.yaml" \
	--junit "$WORK/junit.xml" >"$WORK/tap.txt" 2>"$WORK/stderr.txt" || rc=$?
tail -n 1 "$WORK/tap.txt" >&2
if [ "$rc" != 0 ]; then
	grep -A30 '^not ok' "$WORK/tap.txt" | head -60 >&2 || true
	cat "$WORK/stderr.txt" >&2
	die "kbkit spec run exited $rc"
fi
for suite in edit-text set-outputs tokenizer; do
	n=$(grep "^ok [0-9]* - $suite/" "$WORK/tap.txt" | grep -vc '# SKIP' || true)
	[ "$n" -gt 0 ] || die "no $suite case passed"
	say "$suite: $n cases passed"
done

# The copy kbkit spec export writes (DIR/adapters/typescript, its types
# from DIR/types) compiles and runs against the exported spec.
"$WORK/kbkit" spec export "$WORK/export" 2>/dev/null || die "kbkit spec export failed"
(cd "$WORK/export/adapters/typescript" && npm ci --no-audit --no-fund --loglevel=error && npx --no-install tsc -p .) ||
	die "the exported TypeScript skeleton does not compile"
"$WORK/kbkit" spec run --impl "node $WORK/export/adapters/typescript/build/adapter.js" \
	--expect "$WORK/export/adapters/typescript/expectations.yaml" "$WORK/export" >/dev/null ||
	die "the exported TypeScript skeleton fails the exported spec"
say "the exported copy compiles and passes"

KBKIT_REQUIRE_TS_ADAPTER=1 go test -count=1 -run 'TestTypeScriptAdapterRepliesMatchSchemas' ./speckit/adapter ||
	die "the TypeScript adapter's replies do not match spec/schema/adapter"
# spec fuzz with expectations files: green with them, red when the
# expected bug is not expected (a new difference) or is gone (stale).
fuzz() {
	local name=$1 want=$2 rc=0
	shift 2
	"$WORK/kbkit" spec fuzz --seed 1 --count "${FUZZ_N:-2000}" "$@" >"$WORK/fuzz-$name.txt" 2>&1 || rc=$?
	if [ "$rc" != "$want" ]; then
		tail -n 40 "$WORK/fuzz-$name.txt" >&2
		die "spec fuzz ($name) exited $rc, want $want"
	fi
	say "spec fuzz ($name): exit $rc; $(grep -E '^[0-9]+ inputs' "$WORK/fuzz-$name.txt")"
}
BROKEN=speckit/adapters/broken
fuzz skeleton 0 --impl "node $DIR/build/adapter.js" --expect "$DIR/expectations.yaml"
fuzz node 0 --impl "node speckit/adapters/node/adapter.mjs" --expect speckit/adapters/node/expectations.yaml
fuzz broken-expected 0 --impl "node $BROKEN/adapter.mjs" --expect "$BROKEN/expectations.yaml"
grep -q '^expectation "edit-text/fuzz:doc": expected failure: ' "$WORK/fuzz-broken-expected.txt" ||
	die "spec fuzz did not report the broken adapter's expected difference"
fuzz broken-unexpected 1 --impl "node $BROKEN/adapter.mjs"
grep -q '^signature: edit-text/fuzz:doc$' "$WORK/fuzz-broken-unexpected.txt" || die "spec fuzz printed no signature"
fuzz stale 1 --impl "node speckit/adapters/node/adapter.mjs" --expect "$BROKEN/expectations.yaml"
grep -q '^expectation "edit-text/fuzz:doc": stale expectation: ' "$WORK/fuzz-stale.txt" || die "spec fuzz did not name the stale entry"
say "passed in $(( $(date +%s) - START ))s"
