#!/usr/bin/env bash
# demo.sh — kbkit in one minute (`make demo`):
#
#  1. kbkit serve: the reference server on a throwaway PostgreSQL;
#  2. two devices' windows edit the same pages concurrently through the
#     simulator (kbkit conformance run against that server: typing bursts,
#     structure edits racing, rejections, undo), then every checker runs:
#     convergence (every window renders the fold of the server's log),
#     projection, gapless seqs, exactly-once, rollback, linearizability;
#  3. kbkit loadgen: 4 editors typing on one page for 5 s, with the
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
SERVER_PID=
cleanup() {
	if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
		kill -TERM "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
	fi
}
trap cleanup EXIT
field() { sed -n "s/.*\"$1\":\"\\([^\"]*\\)\".*/\\1/p" "$2" | head -1; }
step() { printf '\n== %s\n' "$*"; }

step "building kbkit (the first build takes a while: go build -v lists packages)"
go build -o "$KBKIT" ./cmd/kbkit

step "kbkit serve --addr 127.0.0.1:0"
"$KBKIT" serve --addr 127.0.0.1:0 --workspace demo --log-level warn >"$OUT/server.json" 2>"$OUT/server.log" &
SERVER_PID=$!
for _ in $(seq 1 1200); do
	[ -s "$OUT/server.json" ] && break
	kill -0 "$SERVER_PID" 2>/dev/null || { cat "$OUT/server.log" >&2; exit 2; }
	sleep 0.1
done
cat "$OUT/server.json"
URL=$(field url "$OUT/server.json")
TOKEN=$(field token "$OUT/server.json")
DSN=$(field dsn "$OUT/server.json")
"$KBKIT" device pair --workspace demo --dsn "$DSN" >"$OUT/device2.json"
TOKEN2=$(field token "$OUT/device2.json")
echo "second device: $(field device_id "$OUT/device2.json")"

step "4 windows on 2 devices edit 3 pages at once, with faults; then the checkers"
"$KBKIT" conformance run --server "$URL" --token "$TOKEN" --token "$TOKEN2" \
	--seeds 3 --windows 4 --pages 3 --steps 60 --faults

step "kbkit loadgen: 4 editors typing on one page for 5 s"
"$KBKIT" loadgen run --server "$URL" --token "$TOKEN" --token "$TOKEN2" \
	--workload hot-page --editors 4 --duration 5s --quiet --json "$OUT/loadgen.json"

step "the server's counters (GET /metrics)"
curl -s "$URL/metrics" | grep -E '^kbkit_(commands_total|subscribers|websocket_connections)' || true

step "done: the server stops and its database is deleted"
