#!/usr/bin/env bash
# make bench-server: kbkit's reference server side by side with the
# physical limit, pgbench, on one local PostgreSQL started for the run
# (fsync and synchronous_commit on: the same settings for both sides).
#
#   1. pgbench TPC-B, 8 clients   | kbkit loadgen many-pages: 1,000 pages, 8 writers, closed model
#   2. pgbench TPC-B, 1 client    | kbkit loadgen hot-page:   1 page, 8 writers, closed model
#   3. kbkit loadgen hot-page: 200 windows on one page, open model at 100 commands/s
#   4. kbkit serve + kbkit loadgen idle: server RSS per idle subscribed window at 5,000 windows
#
# and prints the figures with their targets:
#   many-pages commands/s ÷ pgbench tps (8 clients)  >= 1.0
#   hot-page   commands/s ÷ pgbench tps (1 client)   >= 3.0
#   fan-out p99 ÷ commit p99 (200 windows, 100/s)    <= 1.5
#   RSS per idle subscribed window (5,000)           <= 30 KB
#
# The server is a separate `kbkit serve` process on a fresh database of the
# same PostgreSQL (SERVER=embedded runs it inside the generator instead, so
# that the CPU profile covers both). CPU is sampled from /proc for the
# server and for PostgreSQL during each measured load, and the generator
# reports its own, so each phase prints CPU per command for each process.
#
# Environment: PHASE (measured seconds per phase, default 20), WARMUP
# (unmeasured seconds before each load, default 3; pgbench likewise leaves
# out connection time), OUT (results, default out/bench-server in this
# checkout, ignored by git), KBKIT_PG (provider, default local),
# IDLE_WINDOWS (default 5000), SERVER (serve or embedded). Each load leaves its JSON, text and HTML report and the
# generator's CPU profile in OUT.
set -euo pipefail
shopt -s inherit_errexit

PHASE=${PHASE:-20}
WARMUP=${WARMUP:-3}
IDLE_WINDOWS=${IDLE_WINDOWS:-5000}
SERVER=${SERVER:-serve}
export KBKIT_PG=${KBKIT_PG:-local}
cd "$(dirname "$0")/.."
OUT=${OUT:-out/bench-server}
mkdir -p "$OUT"
rm -f "$OUT"/*

# 5,000 windows are 5,000 sockets on each side.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
if [ "$(ulimit -n)" -lt $((IDLE_WINDOWS + 1000)) ]; then
  echo "bench-server: ulimit -n is $(ulimit -n), need $((IDLE_WINDOWS + 1000)) for $IDLE_WINDOWS windows" >&2
  exit 2
fi
for tool in pgbench psql jq; do
  command -v "$tool" >/dev/null || { echo "bench-server: $tool not found (apt-get install postgresql-client jq)" >&2; exit 2; }
done

go build -o bin/kbkit ./cmd/kbkit
KBKIT=bin/kbkit
PIDS=()
SERVE=
cleanup() {
  if [ -n "$SERVE" ]; then
    kill "$SERVE" 2>/dev/null || true
    wait "$SERVE" 2>/dev/null || true
  fi
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
    kill "${PIDS[i]}" 2>/dev/null || true
    wait "${PIDS[i]}" 2>/dev/null || true
  done
}
trap cleanup EXIT

# waitline FILE SECONDS: wait until FILE has a first line.
waitline() {
  for ((i = 0; i < $2 * 10; i++)); do
    [ -s "$1" ] && return 0
    sleep 0.1
  done
  echo "bench-server: timed out waiting for $1" >&2
  return 1
}

echo "== PostgreSQL ($KBKIT_PG provider)"
$KBKIT pg up >"$OUT/pg.dsn" 2>"$OUT/pg.log" &
PIDS+=($!)
waitline "$OUT/pg.dsn" 180
ADMIN=$(head -1 "$OUT/pg.dsn")
[ -n "$ADMIN" ] || { echo "bench-server: kbkit pg up printed no DSN (see $OUT/pg.log)" >&2; exit 2; }
dbdsn() { # the admin DSN with another database
  case "$ADMIN" in
    postgres://* | postgresql://*) echo "$ADMIN" | sed -E "s#/[^/?]*(\?|$)#/$1\1#" ;;
    *) echo "$ADMIN dbname=$1" ;;
  esac
}
echo "synchronous_commit=$(psql "$ADMIN" -Atc 'show synchronous_commit')" \
  "fsync=$(psql "$ADMIN" -Atc 'show fsync')" \
  "shared_buffers=$(psql "$ADMIN" -Atc 'show shared_buffers')" \
  "server=$(psql "$ADMIN" -Atc 'show server_version')," \
  "$(nproc) cores shared by generator, server and PostgreSQL"

# CPU sampler, every 0.2 s: epoch, ticks of every postgres process (live
# ones, and exited children through the postmaster's cutime/cstime), ticks
# of the current kbkit serve (its pid is in $OUT/serve.pid).
TCK=$(getconf CLK_TCK)
(
  while :; do
    pg=$(awk '$2 == "(postgres)" { s += $14 + $15 + $16 + $17 } END { print s + 0 }' /proc/[0-9]*/stat 2>/dev/null || true)
    sv=0
    if [ -s "$OUT/serve.pid" ]; then
      sv=$(awk '{ print $14 + $15 }' "/proc/$(cat "$OUT/serve.pid")/stat" 2>/dev/null || echo 0)
    fi
    echo "$(date +%s.%N) ${pg:-0} ${sv:-0}"
    sleep 0.2
  done
) >"$OUT/cpu.txt" &
PIDS+=($!)
# cpu FROM TO COLUMN: CPU seconds of a column between two epochs.
cpu() {
  awk -v a="$1" -v b="$2" -v c="$3" -v tck="$TCK" '
    $1 <= a { x = $c } $1 <= b { y = $c } END { printf "%.1f", (y - x) / tck }' "$OUT/cpu.txt"
}
epoch() { date -d "$(jq -r "$1" "$2")" +%s.%N; }

psql "$ADMIN" -qc 'CREATE DATABASE pgbench' >/dev/null
PGB=$(dbdsn pgbench)
pgbench -i -q -s 8 "$PGB" >"$OUT/pgbench-init.txt" 2>&1

# pgbench_phase CLIENTS NAME: prints tps.
pgbench_phase() {
  local t0 t1 tps TIMEFORMAT='%U %S'
  t0=$(date +%s.%N)
  { time pgbench -n -c "$1" -j "$(($1 < 2 ? 1 : 2))" -T "$PHASE" "$PGB" >"$OUT/$2.txt" 2>&1; } 2>"$OUT/$2.time"
  t1=$(date +%s.%N)
  tps=$(awk '/^tps = / { print $3; exit }' "$OUT/$2.txt")
  awk -v tps="$tps" -v s="$PHASE" -v pg="$(cpu "$t0" "$t1" 2)" -v cl="$1" '{ c = $1 + $2 } END {
      n = tps * s
      printf "  pgbench TPC-B, %d client(s): %.1f tps; cpu over %ss: pgbench %.1fs, postgres %.1fs = %.2f / %.2f ms per transaction\n", cl, tps, s, c, pg, 1000 * c / n, 1000 * pg / n
    }' "$OUT/$2.time" >&2
  echo "$tps"
}

# start_serve NAME: a kbkit serve on a fresh database (sets URL, TOKEN).
start_serve() {
  local db=kbkit_${1//-/_}
  psql "$ADMIN" -qc "CREATE DATABASE $db" >/dev/null
  $KBKIT serve --dsn "$(dbdsn "$db")" --addr 127.0.0.1:0 --log-level warn >"$OUT/serve-$1.json" 2>"$OUT/serve-$1.log" &
  SERVE=$!
  echo "$SERVE" >"$OUT/serve.pid"
  waitline "$OUT/serve-$1.json" 60
  URL=$(jq -r .url "$OUT/serve-$1.json")
  TOKEN=$(jq -r .token "$OUT/serve-$1.json")
}
stop_serve() {
  : >"$OUT/serve.pid"
  kill "$SERVE" && wait "$SERVE" || true
  SERVE=
}

# loadgen_phase NAME ARGS...: one load; prints committed commands/s.
loadgen_phase() {
  local name=$1 target a b s rate
  shift
  if [ "$SERVER" = embedded ]; then
    target=(--dsn "")
    export KBKIT_PG_DSN="$ADMIN" # a fresh database on the same PostgreSQL
  else
    start_serve "$name"
    target=(--server "$URL" --token "$TOKEN")
  fi
  KBKIT_PG=dsn $KBKIT loadgen run --quiet --duration "${PHASE}s" --warmup "${WARMUP}s" "${target[@]}" \
    --json "$OUT/$name.json" --html "$OUT/$name.html" --cpuprofile "$OUT/$name.pprof" "$@" >"$OUT/$name.txt"
  [ "$SERVER" = embedded ] || stop_serve
  a=$(epoch .start "$OUT/$name.json")
  b=$(epoch .end "$OUT/$name.json")
  s=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1f", b - a }')
  rate=$(jq -r '.summary.rate' "$OUT/$name.json")
  awk -v r="$rate" -v s="$s" -v g="$(jq -r .cpu_seconds "$OUT/$name.json")" -v sv="$(cpu "$a" "$b" 3)" -v pg="$(cpu "$a" "$b" 2)" \
    -v p99="$(jq -r .summary.latency_ms.commit.p99 "$OUT/$name.json")" -v mode="$SERVER" 'BEGIN {
      n = r * s
      if (mode == "embedded") {
        printf "  loadgen: %.1f commands/s, commit p99 %sms; cpu over %ss: generator+server %.1fs, postgres %.1fs", r, p99, s, g, pg
        if (n > 0) printf " = %.2f / %.2f ms per command", 1000 * g / n, 1000 * pg / n
      } else {
        printf "  loadgen: %.1f commands/s, commit p99 %sms; cpu over %ss: generator %.1fs, server %.1fs, postgres %.1fs", r, p99, s, g, sv, pg
        if (n > 0) printf " = %.2f / %.2f / %.2f ms per command\n  (server and postgres alone: %.2f ms of cpu per command)", 1000 * g / n, 1000 * sv / n, 1000 * pg / n, 1000 * (sv + pg) / n
      }
      printf "\n" }' >&2
  sed 's/^/    /' "$OUT/$name.txt" >&2
  echo "$rate"
}

echo "== 1. many pages: pgbench 8 clients | loadgen 1,000 pages, 8 writers, closed"
TPS8=$(pgbench_phase 8 pgbench-c8)
MANY=$(loadgen_phase many-pages --workload many-pages --pages 1000 --editors 8 --model closed)

echo "== 2. hot page: pgbench 1 client | loadgen 1 page, 8 writers, closed"
TPS1=$(pgbench_phase 1 pgbench-c1)
HOT=$(loadgen_phase hot-page --workload hot-page --editors 8 --model closed)

echo "== 3. fan-out: 200 windows on one page at 100 commands/s (open model)"
loadgen_phase fanout --workload hot-page --editors 200 --rate 100 >/dev/null
FAN=$(jq -r '.summary.latency_ms.fanout.p99' "$OUT/fanout.json")
COM=$(jq -r '.summary.latency_ms.commit.p99' "$OUT/fanout.json")

echo "== 4. memory: kbkit serve with $IDLE_WINDOWS idle subscribed windows"
start_serve idle
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$SERVE/status"; }
# A few windows first, so that the baseline has its pools and buffers.
$KBKIT loadgen idle --server "$URL" --token "$TOKEN" --windows 50 --hold 1s >/dev/null
sleep 2
RSS0=$(rss)
$KBKIT loadgen idle --server "$URL" --token "$TOKEN" --windows "$IDLE_WINDOWS" >"$OUT/idle.json" 2>"$OUT/idle.log" &
PIDS+=($!)
waitline "$OUT/idle.json" 300
sleep 3
RSS1=$(rss)
SUBSCRIBED=$(jq -r .subscribed "$OUT/idle.json")
echo "  server VmRSS ${RSS0} kB before, ${RSS1} kB with $SUBSCRIBED subscribed windows (opened in $(jq -r '.open_seconds * 10 | round / 10' "$OUT/idle.json")s)"

echo
echo "== results (PHASE=${PHASE}s, server: $SERVER; files in $OUT)"
awk -v many="$MANY" -v tps8="$TPS8" -v hot="$HOT" -v tps1="$TPS1" -v fan="$FAN" -v com="$COM" \
  -v r0="$RSS0" -v r1="$RSS1" -v n="$SUBSCRIBED" '
function verdict(ok) { return ok ? "met" : "MISSED" }
END {
  r = many / tps8; printf "many-pages ratio  %6.2f    %7.1f commands/s ÷ %7.1f tps (8 clients)   target >= 1.0  %s\n", r, many, tps8, verdict(r >= 1.0)
  r = hot / tps1;  printf "hot-page ratio    %6.2f    %7.1f commands/s ÷ %7.1f tps (1 client)    target >= 3.0  %s\n", r, hot, tps1, verdict(r >= 3.0)
  r = fan / com;   printf "fan-out/commit    %6.2f    fan-out p99 %.1fms ÷ commit p99 %.1fms          target <= 1.5  %s\n", r, fan, com, verdict(r <= 1.5)
  r = (r1 - r0) / n; printf "RSS per window    %6.1f KB %d kB -> %d kB for %d idle windows     target <= 30   %s\n", r, r0, r1, n, verdict(r <= 30)
}' </dev/null
echo "profiles: go tool pprof -top bin/kbkit $OUT/<phase>.pprof; reports: $OUT/<phase>.html"
