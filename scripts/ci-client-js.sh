#!/usr/bin/env bash
# ci-client-js.sh — foreign clients in the simulator: the example client
# of examples/client-js (Node, the unmodified @trpc/client v11) driven by
# `kbkit conformance run --client` through the kit's fault proxy, on the
# embedded server:
#
#  1. npm ci in examples/client-js;
#  2. 20 seeds with --faults, the client alone (exit 0);
#  3. 20 seeds with --faults, 2 reference windows and 2 foreign clients on
#     the same pages (exit 0);
#  4. the TypeScript skeleton of the client side
#     (speckit/adapters/typescript/src/client.ts): npm ci, tsc, 5 seeds;
#  5. the ratchet of --expect both ways: the client's variant
#     --broken keep-rejected with examples/client-js/expectations.yaml,
#     which expects it to fail rollback and convergence: exit 0; without
#     the file: exit 1; the sound client with those entries made its own:
#     exit 1, stale.
# Every run reads examples/client-js/expectations.yaml.
# Each run prints its time and the intents and faults the clients saw.
# Needs Go, Node.js 20+ and npm (the npm registry), and PostgreSQL server
# binaries (or KBKIT_PG_DSN). About 1-2 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

. scripts/lib/ci.sh
ci_begin ci-client-js
for t in go node npm; do
	command -v "$t" >/dev/null 2>&1 || die "$t is required"
done
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' ||
	die "Node.js 20 or later is required (found $(node --version))"

(cd examples/client-js && npm ci --no-audit --no-fund --loglevel=error) || die "npm ci in examples/client-js failed"
go build -o "$WORK/kbkit" ./cmd/kbkit || die "go build ./cmd/kbkit failed"

CLIENT="node examples/client-js/adapter.mjs"
EXPECT=examples/client-js/expectations.yaml
# run NAME [WANT] ARGS...: kbkit conformance run ARGS must exit WANT (0).
run() {
	local name=$1 want=0
	shift
	case ${1:-} in [0-9]) want=$1; shift ;; esac
	local t0 rc=0
	t0=$(date +%s)
	"$WORK/kbkit" conformance run "$@" >"$WORK/$name.txt" 2>"$WORK/$name.err" || rc=$?
	grep -E '^(checker|[a-z-]+ +[0-9]+ +[0-9]+ )|seeds in|^client ' "$WORK/$name.txt" >&2 || true
	if [ "$rc" != "$want" ]; then
		cat "$WORK/$name.txt" >&2
		grep -v '^\[client' "$WORK/$name.err" | tail -20 >&2
		die "$name: kbkit conformance run $* exited $rc, want $want"
	fi
	say "$name: exit $rc in $(( $(date +%s) - t0 ))s"
}
run alone --client "$CLIENT" --seeds 20 --faults --expect "$EXPECT"
run mixed --windows 2 --client "$CLIENT" --client "$CLIENT" --seeds 20 --faults --expect "$EXPECT"
run page-intents --windows 2 --client "$CLIENT --page-intents" --client "$CLIENT --page-intents" --seeds 10 --faults --expect "$EXPECT"

DIR=speckit/adapters/typescript
(cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error && rm -rf build && npx --no-install tsc -p .) ||
	die "tsc -p $DIR failed (src/client.ts)"
run typescript --client "node $DIR/build/client.js" --seeds 5 --faults --expect "$EXPECT"

# The ratchet both ways. The broken variant beside two kit windows (whose
# races make the server reject its commands) fails rollback and
# convergence.
BROKEN=(--client "$CLIENT --broken keep-rejected" --windows 2 --seeds 3 --shrink=false --reruns 0)
run broken-expected "${BROKEN[@]}" --expect "$EXPECT"
grep -q '^checker rollback: expected failure: ' "$WORK/broken-expected.txt" || die "broken-expected: no expected failure reported"
run broken-unexpected 1 "${BROKEN[@]}"
sed 's| --broken keep-rejected||' "$EXPECT" >"$WORK/stale.yaml"
run stale 1 --client "$CLIENT" --windows 2 --seeds 3 --shrink=false --reruns 0 --expect "$WORK/stale.yaml"
grep -q '^checker rollback: stale expectation: ' "$WORK/stale.txt" || die "stale: the stale entry is not named"

say "passed in $(( $(date +%s) - START ))s"
