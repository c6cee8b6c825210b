#!/usr/bin/env bash
# make bench-server: kbkit's reference server side by side with the
# physical limit, pgbench, on one local PostgreSQL started for the run
# (fsync and synchronous_commit on: the same settings for both sides).
#
#   1. pgbench TPC-B, 8 clients   | kbkit loadgen many-pages: 1,000 pages, 8 writers, closed model
#   2. pgbench TPC-B, 1 client    | kbkit loadgen hot-page:   1 page, 8 writers, closed model
#   3. fan-out: 200 windows on one page at 100 commands/s (open model)
#   4. fan-out: 2,000 windows on one page at 10 commands/s (open model; the
#      same 20,000 echoes/s over ten times the sockets)
#   5. kbkit serve + kbkit loadgen idle: server RSS per idle subscribed
#      window at 5,000 and at 20,000 windows (a fresh server each)
#
# and prints the figures with their targets (the "done when" of the
# performance work; STRICT=1 exits 1 when one is missed):
#   many-pages commands/s ÷ pgbench tps (8 clients)  >= 1.0
#   hot-page   commands/s ÷ pgbench tps (1 client)   >= 3.0
#   fan-out p99 ÷ commit p99 (200 windows, 100/s)    <= 1.5
#   RSS per idle subscribed window                   <= 20 KB (each count)
#   server CPU per echo delivered (each fan-out)     <= 5 µs
# and the goals per process (STRICT=all also fails on these):
#   server CPU per command, many-pages               <= 0.15 ms
#   postgres CPU per command, many-pages             <= half of pgbench's per transaction (8 clients)
#   generator CPU per command (many-pages, hot-page) <= 0.10 ms
#   generator CPU per echo received (each fan-out)   <= 10 µs
# Every load's counts must agree (operations = committed + rejected +
# refused by the window + errors; events received = committed × windows of
# the page): a disagreement fails whatever STRICT says.
#
# The server is a separate `kbkit serve` process on a fresh database of the
# same PostgreSQL (SERVER=embedded runs it inside the generator instead).
# CPU is sampled from /proc every 0.2 s: the kbkit serve process, and this
# run's PostgreSQL alone (its postmaster and its children, live ones and,
# through the postmaster's cumulative children time, the ones that exited
# during the phase, as pgbench's connections do); the generator reports its
# own. Each phase prints CPU per command (and per echo for fan-out) of each
# process.
#
# Environment: PHASE (measured seconds per phase, default 20), WARMUP
# (unmeasured seconds before each load, default 3; pgbench likewise leaves
# out connection time), OUT (results, default out/bench-server in this
# checkout, ignored by git), KBKIT_PG
# (provider, default local), IDLE_WINDOWS (counts, default "5000 20000"),
# SERVER (serve or embedded), STRICT (1: exit 1 on a missed target; all:
# on a missed goal too), PHASES (the phases to run, default all:
# "many-pages hot-page fanout fanout-2000 idle"; the checks of a phase
# not run are left out). Each load leaves in OUT its JSON, text and HTML
# report, the generator's CPU profile (<phase>.pprof) and the server's
# (serve-<phase>.pprof, its top in serve-<phase>.top.txt); every figure is
# also in OUT/results.json.
set -euo pipefail
shopt -s inherit_errexit

PHASE=${PHASE:-20}
WARMUP=${WARMUP:-3}
IDLE_WINDOWS=${IDLE_WINDOWS:-5000 20000}
SERVER=${SERVER:-serve}
STRICT=${STRICT:-0}
PHASES=${PHASES:-many-pages hot-page fanout fanout-2000 idle}
want() { [[ " $PHASES " == *" $1 "* ]]; }
export KBKIT_PG=${KBKIT_PG:-local}
cd "$(dirname "$0")/.."
OUT=${OUT:-out/bench-server}
mkdir -p "$OUT"
rm -f "$OUT"/*

# N idle windows are N sockets on each side.
maxidle=0
for n in $IDLE_WINDOWS; do [ "$n" -gt "$maxidle" ] && maxidle=$n; done
need=$((2 * maxidle + 1000))
[ "$need" -ge 65536 ] || need=65536 # the fan-out phases hold thousands of sockets too
ulimit -n "$need" 2>/dev/null || ulimit -n "$(ulimit -Hn)"
# Each side holds one socket per window: a count past the limit is
# measured at the most windows the limit allows (and says so).
fit=$(($(ulimit -n) - 1000))
if [ "$fit" -lt 2500 ]; then
  echo "bench-server: ulimit -n is $(ulimit -n): the fan-out phases need 3,000 open files" >&2
  exit 2
fi
counts=
for n in $IDLE_WINDOWS; do
  if [ "$n" -gt "$fit" ]; then
    echo "bench-server: ulimit -n is $(ulimit -n) (hard limit $(ulimit -Hn)): $n idle windows measured as $fit" >&2
    n=$fit
  fi
  counts="$counts $n"
done
IDLE_WINDOWS=$counts
for tool in pgbench psql jq go; do
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

# This run's postmaster: the parent of its checkpointer, a long-lived
# child. Other PostgreSQL servers on the machine are not counted.
CKPT=$(psql "$ADMIN" -Atc "select pid from pg_stat_activity where backend_type = 'checkpointer'")
PM=$(awk '{ print $4 }' "/proc/$CKPT/stat" 2>/dev/null || echo 0)
if [ "$(awk '{ print $2 }' "/proc/$PM/stat" 2>/dev/null)" != "(postgres)" ]; then
  echo "bench-server: cannot find the postmaster of the run's PostgreSQL in /proc (checkpointer $CKPT): its CPU is not sampled" >&2
  PM=0
fi

# CPU sampler, every 0.2 s: epoch, ticks of this run's PostgreSQL (the
# postmaster's own and its reaped children's, plus every live child's),
# ticks of the current kbkit serve (its pid is in $OUT/serve.pid).
TCK=$(getconf CLK_TCK)
(
  while :; do
    pg=0
    if [ "$PM" != 0 ]; then
      # cat, not awk on the files: awk stops at a process that exited
      # between the glob and the read.
      pg=$(cat /proc/[0-9]*/stat 2>/dev/null |
        awk -v pm="$PM" '$2 == "(postgres)" && ($1 == pm || $4 == pm) { s += $14 + $15 + $16 + $17 } END { print s + 0 }' || true)
    fi
    sv=0
    if [ -s "$OUT/serve.pid" ]; then
      sv=$(awk '{ print $14 + $15 }' "/proc/$(cat "$OUT/serve.pid")/stat" 2>/dev/null || echo 0)
    fi
    echo "$(date +%s.%N) ${pg:-0} ${sv:-0}"
    sleep 0.2
  done
) >"$OUT/cpu.txt" &
PIDS+=($!)
sleep 0.5
# cpu FROM TO COLUMN: CPU seconds of a column between two epochs.
cpu() {
  awk -v a="$1" -v b="$2" -v c="$3" -v tck="$TCK" '
    $1 <= a { x = $c } $1 <= b { y = $c } END { printf "%.2f", (y - x) / tck }' "$OUT/cpu.txt"
}
epoch() { date -d "$(jq -r "$1" "$2")" +%s.%N; }

psql "$ADMIN" -qc 'CREATE DATABASE pgbench' >/dev/null
PGB=$(dbdsn pgbench)
pgbench -i -q -s 8 "$PGB" >"$OUT/pgbench-init.txt" 2>&1

# pgbench_phase CLIENTS NAME: writes OUT/NAME.result.json.
pgbench_phase() {
  local t0 t1 tps TIMEFORMAT='%U %S'
  t0=$(date +%s.%N)
  { time pgbench -n -c "$1" -j "$(($1 < 2 ? 1 : 2))" -T "$PHASE" "$PGB" >"$OUT/$2.txt" 2>&1; } 2>"$OUT/$2.time"
  t1=$(date +%s.%N)
  sleep 0.3 # the sampler sees the exited connections in the postmaster's children time
  tps=$(awk '/^tps = / { print $3; exit }' "$OUT/$2.txt")
  awk -v tps="$tps" -v s="$PHASE" -v pg="$(cpu "$t0" "$(date +%s.%N)" 2)" -v cl="$1" -v name="$2" '{ c = $1 + $2 } END {
      n = tps * s
      printf "  pgbench TPC-B, %d client(s): %.1f tps; cpu over %ss: pgbench %.1fs, postgres %.1fs = %.3f / %.3f ms per transaction\n", cl, tps, s, c, pg, 1000 * c / n, 1000 * pg / n > "/dev/stderr"
      printf "{\"phase\":\"%s\",\"clients\":%d,\"tps\":%s,\"seconds\":%s,\"cpu_seconds\":{\"pgbench\":%.2f,\"postgres\":%.2f},\"ms_per_transaction\":{\"pgbench\":%.4f,\"postgres\":%.4f}}\n", name, cl, tps, s, c, pg, 1000 * c / n, 1000 * pg / n
    }' "$OUT/$2.time" >"$OUT/$2.result.json"
}

# start_serve NAME: a kbkit serve on a fresh database (sets URL, TOKEN),
# profiling its CPU into OUT/serve-NAME.pprof.
start_serve() {
  local db=kbkit_${1//-/_}
  psql "$ADMIN" -qc "CREATE DATABASE $db" >/dev/null
  # No connection or per-device subscription cap: the idle phase holds
  # up to 20,000 sockets of one device.
  $KBKIT serve --dsn "$(dbdsn "$db")" --addr 127.0.0.1:0 --log-level warn --cpuprofile "$OUT/serve-$1.pprof" \
    --max-conns -1 --max-subs-per-device -1 \
    >"$OUT/serve-$1.json" 2>"$OUT/serve-$1.log" &
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

# loadgen_phase NAME ARGS...: one load; writes OUT/NAME.result.json.
loadgen_phase() {
  local name=$1 target a b
  shift
  if [ "$SERVER" = embedded ]; then
    target=(--dsn "")
    export KBKIT_PG_DSN="$ADMIN" # a fresh database on the same PostgreSQL
  else
    start_serve "$name"
    target=(--server "$URL" --token "$TOKEN")
  fi
  KBKIT_PG=dsn $KBKIT loadgen run --quiet --verbose --duration "${PHASE}s" --warmup "${WARMUP}s" "${target[@]}" \
    --json "$OUT/$name.json" --html "$OUT/$name.html" --cpuprofile "$OUT/$name.pprof" "$@" >"$OUT/$name.txt" 2>"$OUT/$name.log" &
  local gen=$! profiled=
  while kill -0 "$gen" 2>/dev/null; do
    # The server's profile starts with the generator's warm-up (setup left out).
    if [ -z "$profiled" ] && [ -n "$SERVE" ] && grep -qE 'phase (warmup|load)' "$OUT/$name.log"; then
      kill -USR1 "$SERVE"
      profiled=1
    fi
    sleep 0.1
  done
  wait "$gen" || { echo "bench-server: loadgen $name failed:" >&2; cat "$OUT/$name.log" >&2; return 1; }
  if [ "$SERVER" != embedded ]; then
    stop_serve
    go tool pprof -top -nodecount=40 "$KBKIT" "$OUT/serve-$name.pprof" >"$OUT/serve-$name.top.txt" 2>/dev/null || true
  fi
  a=$(epoch .start "$OUT/$name.json")
  b=$(epoch .end "$OUT/$name.json")
  jq -c --arg name "$name" --arg mode "$SERVER" --argjson sv "$(cpu "$a" "$b" 3)" --argjson pg "$(cpu "$a" "$b" 2)" \
    --argjson s "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b - a }')" '
    (.counts.committed) as $n | (.counts.echoes) as $e | .cpu_seconds as $g |
    {phase: $name, server_mode: $mode, seconds: $s, rate: .summary.rate,
     windows_per_page: .run.windows_per_page, pages: .run.pages, editors: .run.editors,
     counts: .counts,
     commit_p99_ms: .summary.latency_ms.commit.p99, fanout_p99_ms: .summary.latency_ms.fanout.p99,
     cpu_seconds: {generator: $g, server: $sv, postgres: $pg},
     ms_per_command: (if $n > 0 then {generator: (1000 * $g / $n), server: (1000 * $sv / $n), postgres: (1000 * $pg / $n)} else null end),
     us_per_echo: (if $e > 0 then {generator: (1e6 * $g / $e), server: (1e6 * $sv / $e)} else null end),
     counts_agree: (.counts.commands == .counts.committed + .counts.rejections + .counts.local_rejections + .counts.errors
                    and .counts.echoes == .counts.committed * .run.windows_per_page)}' \
    "$OUT/$name.json" >"$OUT/$name.result.json"
  jq -r '"  loadgen: \(.rate * 10 | round / 10) commands/s, commit p99 \(.commit_p99_ms)ms; cpu over \(.seconds)s: generator \(.cpu_seconds.generator * 100 | round / 100)s, server \(.cpu_seconds.server)s, postgres \(.cpu_seconds.postgres)s" +
    (if .ms_per_command then " = \(.ms_per_command.generator * 1000 | round / 1000) / \(.ms_per_command.server * 1000 | round / 1000) / \(.ms_per_command.postgres * 1000 | round / 1000) ms per command" else "" end) +
    (if .windows_per_page > 2 and .us_per_echo then "\n  per echo delivered (\(.counts.echoes) events): generator \(.us_per_echo.generator * 10 | round / 10) µs, server \(.us_per_echo.server * 10 | round / 10) µs" else "" end) +
    (if .counts_agree then "" else "\n  COUNTS DISAGREE: \(.counts)" end)' "$OUT/$name.result.json" >&2
  sed 's/^/    /' "$OUT/$name.txt" >&2
  if [ -s "$OUT/serve-$name.top.txt" ]; then
    echo "    server profile (serve-$name.pprof), top functions by flat CPU:" >&2
    awk '/flat%/ { on = 1; print "      " $0; next } on && n < 12 { print "      " $0; n++ }' "$OUT/serve-$name.top.txt" >&2
  fi
}

if want many-pages; then
  echo "== 1. many pages: pgbench 8 clients | loadgen 1,000 pages, 8 writers, closed"
  pgbench_phase 8 pgbench-c8
  loadgen_phase many-pages --workload many-pages --pages 1000 --editors 8 --model closed
fi

if want hot-page; then
  echo "== 2. hot page: pgbench 1 client | loadgen 1 page, 8 writers, closed"
  pgbench_phase 1 pgbench-c1
  loadgen_phase hot-page --workload hot-page --editors 8 --model closed
fi

if want fanout; then
  echo "== 3. fan-out: 200 windows on one page at 100 commands/s (open model)"
  loadgen_phase fanout --workload hot-page --editors 200 --rate 100
fi

if want fanout-2000; then
  echo "== 4. fan-out: 2,000 windows on one page at 10 commands/s (open model)"
  loadgen_phase fanout-2000 --workload hot-page --editors 2000 --rate 10
fi

want idle || IDLE_WINDOWS=
[ -z "$IDLE_WINDOWS" ] || echo "== 5. memory: kbkit serve with idle subscribed windows ($IDLE_WINDOWS)"
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$SERVE/status"; }
for n in $IDLE_WINDOWS; do
  start_serve "idle-$n"
  # A few windows first, so that the baseline has its pools and buffers.
  $KBKIT loadgen idle --server "$URL" --token "$TOKEN" --windows 50 --hold 1s >/dev/null
  sleep 2
  r0=$(rss)
  $KBKIT loadgen idle --server "$URL" --token "$TOKEN" --windows "$n" >"$OUT/idle-$n.json" 2>"$OUT/idle-$n.log" &
  idle=$!
  waitline "$OUT/idle-$n.json" 600
  sleep 3
  r1=$(rss)
  got=$(jq -r .subscribed "$OUT/idle-$n.json")
  kill "$idle" 2>/dev/null || true
  wait "$idle" 2>/dev/null || true
  stop_serve
  jq -nc --argjson n "$n" --argjson got "$got" --argjson r0 "$r0" --argjson r1 "$r1" --argjson open "$(jq .open_seconds "$OUT/idle-$n.json")" \
    '{phase: "idle-\($n)", windows: $n, subscribed: $got, rss_kb_before: $r0, rss_kb_after: $r1, open_seconds: $open,
      kb_per_window: (if $got > 0 then ($r1 - $r0) / $got else null end)}' >"$OUT/idle-$n.result.json"
  echo "  $n windows: server VmRSS ${r0} kB before, ${r1} kB with $got subscribed windows (opened in $(jq -r '.open_seconds * 10 | round / 10' "$OUT/idle-$n.json")s)" >&2
done

# The verdicts: every phase's result, the targets and goals, in one JSON.
jq -s --arg strict "$STRICT" --argjson phase "$PHASE" '
  (map({key: .phase, value: .}) | from_entries) as $p |
  def check(name; kind; value; op; limit; what):
    {name: name, kind: kind, value: value, op: op, limit: limit, what: what,
     met: (if value == null then false elif op == ">=" then value >= limit else value <= limit end)};
  def ran(names): all(names[]; $p[.] != null);
  [ select(ran(["many-pages", "pgbench-c8"])) | check("many-pages ratio"; "target"; $p["many-pages"].rate / $p["pgbench-c8"].tps; ">="; 1.0;
          "\($p["many-pages"].rate * 10 | round / 10) commands/s ÷ \($p["pgbench-c8"].tps) tps (8 clients)")
  ] + [ select(ran(["hot-page", "pgbench-c1"])) | check("hot-page ratio"; "target"; $p["hot-page"].rate / $p["pgbench-c1"].tps; ">="; 3.0;
          "\($p["hot-page"].rate * 10 | round / 10) commands/s ÷ \($p["pgbench-c1"].tps) tps (1 client)")
  ] + [ select(ran(["fanout"])) | check("fan-out/commit p99"; "target"; $p.fanout.fanout_p99_ms / $p.fanout.commit_p99_ms; "<="; 1.5;
          "fan-out p99 \($p.fanout.fanout_p99_ms)ms ÷ commit p99 \($p.fanout.commit_p99_ms)ms (200 windows)") ]
  + [ $p | to_entries[] | select(.key | startswith("idle-")) | .value |
      check("RSS per idle window (\(.windows))"; "target"; .kb_per_window; "<="; 20;
            "KB: \(.rss_kb_before) kB -> \(.rss_kb_after) kB for \(.subscribed) windows") ]
  + [ ("fanout", "fanout-2000") as $f | select(ran([$f])) | $p[$f] |
      check("server µs per echo (\(.windows_per_page) windows)"; "target"; .us_per_echo.server; "<="; 5;
            "\(.cpu_seconds.server)s for \(.counts.echoes) echoes"),
      check("generator µs per echo (\(.windows_per_page) windows)"; "goal"; .us_per_echo.generator; "<="; 10;
            "\(.cpu_seconds.generator * 100 | round / 100)s for \(.counts.echoes) echoes") ]
  + [ select(ran(["many-pages", "pgbench-c8"])) | check("server ms per command (many-pages)"; "goal"; $p["many-pages"].ms_per_command.server; "<="; 0.15; "server process"),
      check("postgres ms per command (many-pages)"; "goal"; $p["many-pages"].ms_per_command.postgres; "<=";
            ($p["pgbench-c8"].ms_per_transaction.postgres / 2); "half of pgbench 8 clients: \($p["pgbench-c8"].ms_per_transaction.postgres) ms per transaction"),
      check("generator ms per command (many-pages)"; "goal"; $p["many-pages"].ms_per_command.generator; "<="; 0.10; "generator process")
  ] + [ select(ran(["hot-page"])) | check("generator ms per command (hot-page)"; "goal"; $p["hot-page"].ms_per_command.generator; "<="; 0.10; "generator process") ]
  + [ $p | to_entries[] | select(.value.counts_agree == false) | .value |
      {name: "counts of \(.phase)", kind: "target", value: null, op: "==", limit: null, what: "\(.counts)", met: false} ]
  | {phase_seconds: $phase, strict: $strict, phases: $p, checks: .,
     missed_targets: map(select(.kind == "target" and (.met | not)) | .name),
     missed_goals: map(select(.kind == "goal" and (.met | not)) | .name)}
' "$OUT"/*.result.json >"$OUT/results.json"

echo
echo "== results (PHASE=${PHASE}s, server: $SERVER; files in $OUT, all figures in $OUT/results.json)"
jq -r '.checks[] | "\(.kind)  \(.name | . + " " * (40 - length))  \(if .value == null then "n/a" else (.value * 1000 | round / 1000 | tostring) end | . + " " * (9 - length)) \(.op) \(.limit // "" | if type == "number" then (. * 1000 | round / 1000) else . end)   \(if .met then "met" else "MISSED" end)   \(.what)"' "$OUT/results.json"
echo "profiles: go tool pprof -top bin/kbkit $OUT/serve-<phase>.pprof (server), $OUT/<phase>.pprof (generator); reports: $OUT/<phase>.html"

missed_targets=$(jq '.missed_targets | length' "$OUT/results.json")
missed_goals=$(jq '.missed_goals | length' "$OUT/results.json")
counts_bad=$(jq '[.checks[] | select(.name | startswith("counts of"))] | length' "$OUT/results.json")
if [ "$counts_bad" -gt 0 ]; then
  echo "bench-server: the counts of a load disagree" >&2
  exit 1
fi
case "$STRICT" in
  1 | true | yes) [ "$missed_targets" -eq 0 ] || { echo "bench-server: STRICT: $missed_targets target(s) missed" >&2; exit 1; } ;;
  all) [ $((missed_targets + missed_goals)) -eq 0 ] || { echo "bench-server: STRICT=all: $missed_targets target(s) and $missed_goals goal(s) missed" >&2; exit 1; } ;;
esac
exit 0
