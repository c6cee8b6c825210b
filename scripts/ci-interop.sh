#!/usr/bin/env bash
# ci-interop.sh — interop with the real tRPC client: run
# interop/trpc/check.mjs (the unmodified @trpc/client v11 with httpLink,
# httpBatchLink and wsLink) against `kbkit serve`.
#
#  1. go build ./cmd/kbkit
#  2. kbkit serve --addr 127.0.0.1:0 --workspace interop (a throwaway
#     PostgreSQL from this machine's binaries unless KBKIT_PG or
#     KBKIT_PG_DSN says otherwise); read its JSON line
#  3. pair a device with `kbkit device pair --dsn <its dsn>`
#  4. npm ci in interop/trpc, then node interop/trpc/check.mjs with the
#     server's URL and the paired device's token
#  5. tsc -p interop/trpc: the router type of spec/types/trpc.d.ts with a
#     small typed client (typed-client.ts, whose @ts-expect-error lines
#     must stay errors), then the compiled client against the server
#  6. stop the server with SIGTERM (it must exit cleanly)
# Any failure exits non-zero. Needs Go, Node.js 18+ and npm (the npm
# registry, for npm ci), and PostgreSQL server binaries (or a DSN).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

. scripts/lib/ci.sh
. scripts/lib/serve.sh
ci_begin ci-interop

for t in go node npm; do
	command -v "$t" >/dev/null 2>&1 || die "$t is required"
done
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 18 ? 0 : 1)' ||
	die "Node.js 18 or later is required (found $(node --version))"

# json FIELD < FILE: a string field of the first JSON line.
json() {
	node -e 'const l = require("fs").readFileSync(0, "utf8").split("\n").find((s) => s.trim().startsWith("{"));
		const v = l && JSON.parse(l)[process.argv[1]];
		if (typeof v !== "string" || v === "") process.exit(1);
		process.stdout.write(v);' "$1"
}

BIN=$WORK/kbkit
go build -o "$BIN" ./cmd/kbkit || die "go build ./cmd/kbkit failed"

say "starting kbkit serve --addr 127.0.0.1:0"
serve_start "$BIN" "$WORK" --workspace interop
URL=$(json url <"$WORK/serve.json") || die "no url in the JSON line: $(cat "$WORK/serve.json")"
DSN=$(json dsn <"$WORK/serve.json") || die "no dsn in the JSON line"
WORKSPACE_ID=$(json workspace_id <"$WORK/serve.json") || die "no workspace_id in the JSON line"
say "server at $URL"

"$BIN" device pair --workspace interop --dsn "$DSN" >"$WORK/device.json" || die "kbkit device pair failed"
TOKEN=$(json token <"$WORK/device.json") || die "no token from kbkit device pair"
DEVICE_ID=$(json device_id <"$WORK/device.json") || die "no device_id from kbkit device pair"
say "paired device $DEVICE_ID"

t0=$(date +%s)
(cd interop/trpc && npm ci --no-audit --no-fund --loglevel=error) || die "npm ci in interop/trpc failed"
say "npm ci took $(( $(date +%s) - t0 ))s"

rc=0
KBKIT_URL=$URL KBKIT_TOKEN=$TOKEN KBKIT_DEVICE_ID=$DEVICE_ID KBKIT_WORKSPACE_ID=$WORKSPACE_ID \
	node interop/trpc/check.mjs || rc=$?
[ "$rc" = 0 ] || die "interop/trpc/check.mjs exited $rc"

t0=$(date +%s)
(cd interop/trpc && rm -rf build && npx --no-install tsc -p .) || die "tsc -p interop/trpc failed (spec/types/trpc.d.ts and typed-client.ts)"
say "tsc took $(( $(date +%s) - t0 ))s"
KBKIT_URL=$URL KBKIT_TOKEN=$TOKEN node interop/trpc/build/interop/trpc/typed-client.js || die "the typed @trpc/client (typed-client.ts) failed"

say "stopping kbkit serve"
serve_stop
say "passed in $(( $(date +%s) - START ))s"
