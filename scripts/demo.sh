#!/usr/bin/env bash
# demo.sh — kbkit in one minute (`make demo`):
#
#  1. kbkit serve: the reference server on a throwaway PostgreSQL;
#  2. two devices' windows edit the same pages concurrently through the
#     simulator (kbkit conformance run against that server: typing bursts,
#     structure edits racing, rejections, undo), then every checker runs:
#     convergence (every window renders the fold of the server's log),
#     projection, gapless seqs, exactly-once, rollback, linearizability;
#  3. kbkit loadgen, workload hot-page: 4 editors on one page for 5 s
#     (edits, creates, moves and deletes racing), with the
#     commit, echo and fan-out latencies and the convergence at the end;
#  4. the server's counters (GET /metrics).
#
# Everything runs on this machine (loopback only) and is deleted at the
# end. Needs Go and PostgreSQL's server binaries (or KBKIT_PG_DSN / Docker).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

OUT=${OUT:-out}/demo
mkdir -p "$OUT"
rm -f "$OUT"/*
KBKIT=$OUT/kbkit
die() { echo "demo: $*" >&2; [ -s "$OUT/serve.log" ] && cat "$OUT/serve.log" >&2; exit 2; }
. scripts/lib/serve.sh
trap serve_kill EXIT
field() { sed -n "s/.*\"$1\":\"\\([^\"]*\\)\".*/\\1/p" "$2" | head -1; }
step() { printf '\n== %s\n' "$*"; }

step "building kbkit (the first build takes a while: go build -v lists packages)"
go build -o "$KBKIT" ./cmd/kbkit

step "kbkit serve --addr 127.0.0.1:0"
serve_start "$KBKIT" "$OUT" --workspace demo --log-level warn
cat "$OUT/serve.json"
URL=$(serve_field url)
TOKEN=$(serve_field token)
DSN=$(serve_field dsn)
"$KBKIT" device pair --workspace demo --dsn "$DSN" >"$OUT/device2.json"
TOKEN2=$(field token "$OUT/device2.json")
echo "second device: $(field device_id "$OUT/device2.json")"

step "kbkit conformance run --seeds 3 --windows 4 --pages 3 --steps 60 --faults: 4 windows on 2 devices edit 3 pages at once, with faults; then the checkers"
"$KBKIT" conformance run --server "$URL" --token "$TOKEN" --token "$TOKEN2" \
	--seeds 3 --windows 4 --pages 3 --steps 60 --faults

step "kbkit loadgen run --workload hot-page --editors 4 --duration 5s: 4 editors on one page (edits, creates, moves and deletes racing; node-not-found rejections are those races decided)"
"$KBKIT" loadgen run --server "$URL" --token "$TOKEN" --token "$TOKEN2" \
	--workload hot-page --editors 4 --duration 5s --quiet --json "$OUT/loadgen.json"

step "the server's counters (GET /metrics)"
curl -s "$URL/metrics" | grep -E '^kbkit_(commands_total|subscribers|websocket_connections)' || true

step "done: the server stops and its database is deleted"
