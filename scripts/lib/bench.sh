# scripts/lib/bench.sh — what bench-server.sh and bench-scaling.sh share:
# one local PostgreSQL for the run, a CPU sampler, a fresh `kbkit serve`
# per load, one loadgen load with its per-process CPU, one idle-RSS
# measurement and the machine's floors (`kbkit bench floor`).
#
# Source it from the checkout's root after setting BENCH (the script's
# name, for messages), OUT (an existing directory), PHASE and WARMUP
# (seconds), SERVER (serve or embedded), KBKIT_PG.
#
#   bench_ulimit MAXWINDOWS       raise ulimit -n for MAXWINDOWS sockets a side (sets FIT:
#                                 the most windows one side may hold)
#   bench_fit N                   N, or FIT with a note on stderr when N is past it
#   bench_tools TOOL...           exit 2 unless each TOOL is on PATH
#   bench_build                   go build bin/kbkit and bin/cpusample (the sampler); installs the EXIT trap
#   bench_pg                      start PostgreSQL (sets ADMIN, PGDATA_DIR, BENCH_PROVIDER) and the sampler
#   create_db DB                  a database of the run (dropped at exit from a dsn provider's server)
#   dbdsn DB                      the admin DSN with another database
#   cpu FROM TO COLUMN            CPU seconds between two epochs of a sampler column
#                                 (2 PostgreSQL, 3 kbkit serve, 4 the whole machine)
#   bench_floor FLOORS [ARGS...]  kbkit bench floor --json into OUT/floor.json (text on stderr)
#   start_serve NAME / stop_serve a kbkit serve on a fresh database (sets URL, TOKEN, SERVE)
#   loadgen_phase NAME ARGS...    one load; OUT/NAME.result.json
#   idle_phase N                  server RSS with N idle subscribed windows; OUT/idle-N.result.json
#
# Each result.json has machine_cpu: the CPU of generator, server and
# PostgreSQL over nproc × seconds (what the run used of the machine), and
# the whole machine's busy time from /proc/stat: what the others sharing it
# used besides, and the cores left idle (none left: the run was CPU-bound).

NPROC=$(nproc)
TCK=$(getconf CLK_TCK)
PIDS=()
SERVE=
KBKIT=bin/kbkit
CPUSAMPLE=bin/cpusample

bench_die() {
  echo "$BENCH: $*" >&2
  exit 2
}

bench_ulimit() {
  # N windows are N sockets on each side (both in one process when the
  # server is embedded).
  local need=$((2 * $1 + 1000))
  [ "$need" -ge 65536 ] || need=65536 # the fan-out phases hold thousands of sockets too
  ulimit -n "$need" 2>/dev/null || ulimit -n "$(ulimit -Hn)"
  # Each side holds one socket per window: a count past the limit is
  # measured at the most windows the limit allows (and says so).
  FIT=$(($(ulimit -n) - 1000))
  if [ "$FIT" -lt 2500 ]; then
    bench_die "ulimit -n is $(ulimit -n): the fan-out phases need 3,000 open files"
  fi
}

bench_fit() {
  if [ "$1" -gt "$FIT" ]; then
    echo "$BENCH: ulimit -n is $(ulimit -n) (hard limit $(ulimit -Hn)): $1 windows measured as $FIT" >&2
    echo "$FIT"
  else
    echo "$1"
  fi
}

bench_tools() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null || bench_die "$tool not found (apt-get install postgresql-client jq)"
  done
}

bench_cleanup() {
  if [ -n "$SERVE" ]; then
    kill "$SERVE" 2>/dev/null || true
    wait "$SERVE" 2>/dev/null || true
  fi
  # On a server the run was given (dsn), the databases it made go with
  # it, so that the next run finds the server as this one did; a server
  # the run started goes away whole.
  if [ "${BENCH_PROVIDER:-}" = dsn ]; then
    local db
    for db in "${BENCH_DBS[@]}"; do
      psql "$ADMIN" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 ||
        echo "$BENCH: could not drop database $db on the given server" >&2
    done
  fi
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
    kill "${PIDS[i]}" 2>/dev/null || true
    wait "${PIDS[i]}" 2>/dev/null || true
  done
}

bench_build() {
  go build -o "$KBKIT" ./cmd/kbkit
  go build -o "$CPUSAMPLE" ./scripts/cpusample
  trap bench_cleanup EXIT
}

# waitline FILE SECONDS: wait until FILE has a first line.
waitline() {
  for ((i = 0; i < $2 * 10; i++)); do
    [ -s "$1" ] && return 0
    sleep 0.1
  done
  echo "$BENCH: timed out waiting for $1" >&2
  return 1
}

# create_db NAME: a database of the run (dropped at exit from a given
# server: bench_cleanup).
BENCH_DBS=()
create_db() {
  psql "$ADMIN" -qc "CREATE DATABASE $1" >/dev/null || bench_die "cannot create database $1 (a run before this one left it? drop it)"
  BENCH_DBS+=("$1")
}

dbdsn() { # the admin DSN with another database
  case "$ADMIN" in
    postgres://* | postgresql://*) echo "$ADMIN" | sed -E "s#/[^/?]*(\?|$)#/$1\1#" ;;
    *) echo "$ADMIN dbname=$1" ;;
  esac
}

bench_pg() {
  echo "== PostgreSQL ($KBKIT_PG provider)"
  $KBKIT pg up >"$OUT/pg.dsn" 2>"$OUT/pg.log" &
  PIDS+=($!)
  waitline "$OUT/pg.dsn" 180
  ADMIN=$(head -1 "$OUT/pg.dsn")
  [ -n "$ADMIN" ] || bench_die "kbkit pg up printed no DSN (see $OUT/pg.log)"
  PGDATA_DIR=$(psql "$ADMIN" -Atc 'show data_directory' 2>/dev/null || true)
  # The time of each WAL flush (pg_stat_wal.wal_sync_time; the waits'
  # fdatasync figures): timed on a server this run started (the provider
  # `kbkit pg up` logged before printing the DSN), never on one it was
  # given (dsn), whose settings are its owner's.
  BENCH_PROVIDER=$(jq -r '.msg // "" | capture("using (?<k>[a-z]+) provider").k' "$OUT/pg.log" 2>/dev/null | head -1)
  case "$BENCH_PROVIDER" in
    local | docker)
      psql "$ADMIN" -qc 'ALTER SYSTEM SET track_wal_io_timing = on' -c 'SELECT pg_reload_conf()' >/dev/null ||
        bench_die "cannot turn track_wal_io_timing on (see $OUT/pg.log)" ;;
    dsn) ;;
    *) echo "$BENCH: $OUT/pg.log names no provider: the WAL flushes are not timed" >&2 ;;
  esac
  echo "synchronous_commit=$(psql "$ADMIN" -Atc 'show synchronous_commit')" \
    "fsync=$(psql "$ADMIN" -Atc 'show fsync')" \
    "shared_buffers=$(psql "$ADMIN" -Atc 'show shared_buffers')" \
    "server=$(psql "$ADMIN" -Atc 'show server_version')," \
    "$NPROC cores shared by generator, server and PostgreSQL"

  # This run's postmaster: the parent of its checkpointer, a long-lived
  # child. Other PostgreSQL servers on the machine are not counted.
  local ckpt
  ckpt=$(psql "$ADMIN" -Atc "select pid from pg_stat_activity where backend_type = 'checkpointer'")
  PM=$(awk '{ print $4 }' "/proc/$ckpt/stat" 2>/dev/null || echo 0)
  if [ "$(awk '{ print $2 }' "/proc/$PM/stat" 2>/dev/null)" != "(postgres)" ]; then
    echo "$BENCH: cannot find the postmaster of the run's PostgreSQL in /proc (checkpointer $ckpt): its CPU is not sampled" >&2
    PM=0
  fi

  # CPU sampler, every 0.2 s (scripts/cpusample): epoch, ticks of this
  # run's PostgreSQL (the postmaster's own and its reaped children's, plus
  # every live child's), ticks of the current kbkit serve (its pid is in
  # $OUT/serve.pid), busy ticks of the whole machine (/proc/stat: all but
  # idle and iowait). It forks nothing: the shell loop it replaced forked
  # cat and awk five times a sample, a sixth of a core on a machine where
  # a fork costs 4 ms, taken from the loads it measured.
  "$CPUSAMPLE" -postmaster "$PM" -serve-pid "$OUT/serve.pid" -every 200ms >"$OUT/cpu.txt" &
  PIDS+=($!)
  sleep 0.5
}

# cpu FROM TO COLUMN: CPU seconds of a column between two epochs.
cpu() {
  awk -v a="$1" -v b="$2" -v c="$3" -v tck="$TCK" '
    NF == 4 && $1 > 1e9 && $1 <= a { x = $c } NF == 4 && $1 > 1e9 && $1 <= b { y = $c } END { printf "%.2f", (y - x) / tck }' "$OUT/cpu.txt"
}
epoch() { date -d "$(jq -r "$1" "$2")" +%s.%N; }

# clocks: the wall clock and the kernel's uptime, in seconds. The uptime
# stands still while the machine is paused (a virtual machine snapshotted
# or migrated, a host suspended) and the wall clock does not, or is set
# forward at the resume.
clocks() { echo "$(date +%s.%N) $(cut -d' ' -f1 /proc/uptime)"; }
# paused_since WALL UPTIME (a reading of clocks): the seconds the machine
# stood still since, when the wall clock ran ahead of the uptime by 1 s or
# more (NTP slews by at most 0.5 ms a second), else 0.
paused_since() {
  local w u
  read -r w u < <(clocks)
  awk -v w0="$1" -v u0="$2" -v w="$w" -v u="$u" 'BEGIN { g = (w - w0) - (u - u0); if (g >= 1) printf "%.1f", g; else printf "0" }'
}

# machine_cpu_json USED_CPU_SECONDS MACHINE_CPU_SECONDS SECONDS: the
# machine_cpu object of a result.
machine_cpu_json() {
  jq -nc --argjson used "$1" --argjson mach "$2" --argjson s "$3" --argjson n "$NPROC" '
    {cores: $n, seconds: $s, cpu_seconds: $used, used_cores: ($used / $s), used_fraction: ($used / ($n * $s)),
     machine_busy_cores: ($mach / $s), others_cores: ([($mach - $used) / $s, 0] | max),
     idle_cores: ([$n - $mach / $s, 0] | max)}'
}
# machine_cpu_line RESULT_JSON: "cpu used 1.36 of 2 cores (68%) ..."
machine_cpu_line() {
  jq -r '.machine_cpu | "  cpu used \(.used_cores * 100 | round / 100) of \(.cores) cores (\(.used_fraction * 100 | round)%) by this run; the machine was \(.machine_busy_cores * 100 | round / 100) cores busy (\(.others_cores * 100 | round / 100) by others, \(.idle_cores * 100 | round / 100) idle)"' "$1" >&2
}

# bench_floor FLOORS [ARGS...]: the machine's floors into OUT/floor.json,
# the fdatasync one on the disk of PostgreSQL's data directory.
bench_floor() {
  local floors=$1 dir
  shift
  dir=$(dirname "${PGDATA_DIR:-$OUT/x}")
  [ -d "$dir" ] && [ -w "$dir" ] || dir=$OUT
  echo "== floors: kbkit bench floor --floors $floors $* --fsync-dir $dir"
  $KBKIT bench floor --json --floors "$floors" --fsync-dir "$dir" "$@" >"$OUT/floor.json" 2>"$OUT/floor.txt" ||
    { cat "$OUT/floor.txt" >&2; bench_die "kbkit bench floor failed"; }
  sed 's/^/  /' "$OUT/floor.txt" >&2
}
# floor_loopback SOCKETS FIELD: a field of the loopback floor at SOCKETS
# sockets, or null.
floor_loopback() {
  jq -c --argjson n "$1" "[.loopback[]? | select(.sockets == \$n) | .$2][0]" "$OUT/floor.json" 2>/dev/null || echo null
}

# start_serve NAME: a kbkit serve on a fresh database (sets URL, TOKEN),
# profiling its CPU into OUT/serve-NAME.pprof.
start_serve() {
  local db=kbkit_${1//-/_}${ROUND:+_r$ROUND}${ATTEMPT:+_a$ATTEMPT}
  create_db "$db"
  rm -f "${RO:-$OUT}/serve-$1.json" # an earlier attempt's (run_round_unpaused): waitline must see this one's
  # No connection or per-device subscription cap: the idle phase holds
  # up to 20,000 sockets of one device.
  $KBKIT serve --dsn "$(dbdsn "$db")" --addr 127.0.0.1:0 --log-level warn --cpuprofile "${RO:-$OUT}/serve-$1.pprof" \
    --max-conns -1 --max-subs-per-device -1 \
    >"${RO:-$OUT}/serve-$1.json" 2>"${RO:-$OUT}/serve-$1.log" &
  SERVE=$!
  echo "$SERVE" >"$OUT/serve.pid"
  waitline "${RO:-$OUT}/serve-$1.json" 60
  URL=$(jq -r .url "${RO:-$OUT}/serve-$1.json")
  TOKEN=$(jq -r .token "${RO:-$OUT}/serve-$1.json")
}
stop_serve() {
  : >"$OUT/serve.pid"
  kill "$SERVE" && wait "$SERVE" || true
  SERVE=
}

# scrape FILE: the running kbkit serve's /metrics (none in embedded
# mode) and PostgreSQL's WAL flushes (pg_stat_wal.wal_sync) with their
# milliseconds when the server times them (track_wal_io_timing), as one
# JSON object of "name{labels}" -> value.
scrape() {
  {
    if [ -n "${SERVE:-}" ]; then curl -fsS --max-time 5 "$URL/metrics" || true; fi
    psql "$ADMIN" -Atc "SELECT 'pg_wal_sync ' || wal_sync FROM pg_stat_wal
      UNION ALL SELECT 'pg_wal_sync_ms ' || wal_sync_time FROM pg_stat_wal WHERE current_setting('track_wal_io_timing')::bool" || true
  } | jq -R -n '[inputs | select(startswith("#") | not) | capture("^(?<k>\\S+) (?<v>\\S+)$")? | {(.k): (.v | tonumber? // null)}] | add // {}' >"$1"
}

# waits_line RESULT_JSON: where the commands' time went (waits.jq), in two
# or three lines.
waits_line() {
  jq -r 'def p: . * 100 | round | tostring + "%"; def ms: if . == null then "n/a" else . * 100 | round / 100 | tostring end;
    .waits | select(. != null and .transactions > 0) |
    "  waits: \(.commands_per_transaction * 10 | round / 10) commands per transaction (" +
      (.transaction_sizes | to_entries | map(select(.value > 0.005) | "\(.key): \(.value | p)") | join(", ")) + ")" +
      (if .commands_per_wal_flush then ", \(.commands_per_wal_flush * 10 | round / 10) per WAL flush" else "" end) +
      (if .ms_per_wal_flush then " (fdatasync \(.ms_per_wal_flush | ms) ms each, WAL flushing \(.wal_flush_fraction | p) of the time)" else "" end) +
      "; transactions " + (.transaction_share | to_entries | map("\(.key) \(.value | p)") | join(", ")) +
    "\n    a command: \(.ms_per_command.in_server | ms) ms in the server = \(.ms_per_command.in_store | ms) in the store (\(.ms_per_command.queued_for_page | ms) of it queued for its page) + \(.ms_per_command.outside_store | ms) transport, parsing and checks" +
      (if .websocket_writes_per_command then "; \(.websocket_writes_per_command * 10 | round / 10) WebSocket writes of \(.websocket_frames_per_write * 10 | round / 10) frames each" else "" end) +
    "\n    a transaction: \(.ms_per_transaction.total | ms) ms = \(.ms_per_transaction.postgres | ms) waiting for Postgres + \(.ms_per_transaction.planning | ms) planning and writing with the page held; the transaction slot busy \(.slot_busy_fraction.total | p) of the time (Postgres \(.slot_busy_fraction.postgres | p), planning \(.slot_busy_fraction.planning | p), gathering the next group \(.slot_busy_fraction.gathering | p))"' "$1" >&2
}

# loadgen_phase NAME ARGS...: one load; writes OUT/NAME.result.json. Its
# windows send their commands as COMMANDS says, else as PHASE_COMMANDS
# (the phase's own), else over HTTP.
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
    --commands "${COMMANDS:-${PHASE_COMMANDS:-http}}" --json "${RO:-$OUT}/$name.json" --html "${RO:-$OUT}/$name.html" --cpuprofile "${RO:-$OUT}/$name.pprof" "$@" >"${RO:-$OUT}/$name.txt" 2>"${RO:-$OUT}/$name.log" &
  local gen=$! profiled= scraped=
  # Poll the generator's log until the server's profile is started and the
  # first scrape taken, then only wait: a poll forks (grep, sleep), which
  # costs CPU the load would have had.
  [ -n "$SERVE" ] || profiled=1
  while { [ -z "$profiled" ] || [ -z "$scraped" ]; } && kill -0 "$gen" 2>/dev/null; do
    # The server's profile starts with the generator's warm-up (setup left out).
    if [ -z "$profiled" ] && grep -qsE 'phase (warmup|load)' "${RO:-$OUT}/$name.log"; then
      kill -USR1 "$SERVE"
      profiled=1
    fi
    if [ -z "$scraped" ] && grep -qsE 'phase load' "${RO:-$OUT}/$name.log"; then
      scrape "${RO:-$OUT}/$name.metrics0.json"
      scraped=1
    fi
    sleep 0.1
  done
  wait "$gen" || { echo "$BENCH: loadgen $name failed:" >&2; cat "${RO:-$OUT}/$name.log" >&2; return 1; }
  scrape "${RO:-$OUT}/$name.metrics1.json"
  [ -n "$scraped" ] || cp "${RO:-$OUT}/$name.metrics1.json" "${RO:-$OUT}/$name.metrics0.json"
  if [ "$SERVER" != embedded ]; then
    stop_serve
    go tool pprof -top -nodecount=40 "$KBKIT" "${RO:-$OUT}/serve-$name.pprof" >"${RO:-$OUT}/serve-$name.top.txt" 2>/dev/null || true
  fi
  a=$(epoch .start "${RO:-$OUT}/$name.json")
  b=$(epoch .end "${RO:-$OUT}/$name.json")
  local s sv pg g
  # The load's running seconds: its wall-clock span less any pause the
  # generator saw (paused_seconds; nothing ran, CPU included).
  s=$(awk -v a="$a" -v b="$b" -v p="$(jq '.paused_seconds // 0' "${RO:-$OUT}/$name.json")" 'BEGIN { printf "%.3f", b - a - p }')
  sv=$(cpu "$a" "$b" 3)
  pg=$(cpu "$a" "$b" 2)
  g=$(jq .cpu_seconds "${RO:-$OUT}/$name.json")
  jq -c --arg name "$name" --arg mode "$SERVER" --argjson sv "$sv" --argjson pg "$pg" --argjson s "$s" \
    --argjson machine "$(machine_cpu_json "$(awk -v g="$g" -v sv="$sv" -v pg="$pg" 'BEGIN { printf "%.2f", g + sv + pg }')" "$(cpu "$a" "$b" 4)" "$s")" '
    (.counts.committed) as $n | (.counts.echoes) as $e | .cpu_seconds as $g |
    {phase: $name, server_mode: $mode, seconds: $s, rate: .summary.rate,
     windows_per_page: .run.windows_per_page, pages: .run.pages, editors: .run.editors, commands: .run.commands,
     counts: .counts, paused_seconds: (.paused_seconds // 0),
     commit_p50_ms: .summary.latency_ms.commit.p50, commit_p99_ms: .summary.latency_ms.commit.p99,
     fanout_p50_ms: .summary.latency_ms.fanout.p50, fanout_p99_ms: .summary.latency_ms.fanout.p99,
     cpu_seconds: {generator: $g, server: $sv, postgres: $pg},
     machine_cpu: $machine,
     ms_per_command: (if $n > 0 then {generator: (1000 * $g / $n), server: (1000 * $sv / $n), postgres: (1000 * $pg / $n)} else null end),
     us_per_echo: (if $e > 0 then {generator: (1e6 * $g / $e), server: (1e6 * $sv / $e)} else null end),
     counts_agree: (.counts.commands == .counts.committed + .counts.rejections + .counts.local_rejections + .counts.errors
                    and .counts.echoes == .counts.committed * .run.windows_per_page)}' \
    "${RO:-$OUT}/$name.json" >"${RO:-$OUT}/$name.tmp.json"
  jq -nc --slurpfile m0 "${RO:-$OUT}/$name.metrics0.json" --slurpfile m1 "${RO:-$OUT}/$name.metrics1.json" \
    --argjson s "$(jq .seconds "${RO:-$OUT}/$name.tmp.json")" --argjson n "$(jq .counts.committed "${RO:-$OUT}/$name.tmp.json")" \
    -f scripts/lib/waits.jq >"${RO:-$OUT}/$name.waits.json"
  jq -c --slurpfile w "${RO:-$OUT}/$name.waits.json" '. + {waits: $w[0]}' "${RO:-$OUT}/$name.tmp.json" >"${RO:-$OUT}/$name.result.json"
  rm -f "${RO:-$OUT}/$name.tmp.json"
  jq -r '"  loadgen: \(.rate * 10 | round / 10) commands/s (sent over \(.commands // "unknown")), commit p99 \(.commit_p99_ms)ms; cpu over \(.seconds)s: generator \(.cpu_seconds.generator * 100 | round / 100)s, server \(.cpu_seconds.server)s, postgres \(.cpu_seconds.postgres)s" +
    (if .ms_per_command then " = \(.ms_per_command.generator * 1000 | round / 1000) / \(.ms_per_command.server * 1000 | round / 1000) / \(.ms_per_command.postgres * 1000 | round / 1000) ms per command" else "" end) +
    (if .windows_per_page > 2 and .us_per_echo then "\n  per echo delivered (\(.counts.echoes) events): generator \(.us_per_echo.generator * 10 | round / 10) µs, server \(.us_per_echo.server * 10 | round / 10) µs" else "" end) +
    (if .counts_agree then "" else "\n  COUNTS DISAGREE: \(.counts)" end)' "${RO:-$OUT}/$name.result.json" >&2
  local w fw fr
  w=$(jq .windows_per_page "${RO:-$OUT}/$name.result.json")
  fw=$(floor_loopback "$w" us_per_write)
  fr=$(floor_loopback "$w" us_per_read)
  if [ "$w" -gt 2 ] && [ "$fw" != null ]; then
    echo "  floor ($w loopback sockets, $(floor_loopback "$w" size)-byte messages at $(floor_loopback "$w" rate)/s): $(printf %.1f "$fw") µs of CPU per write (under the server's), $(printf %.1f "$fr") µs per read (under the generator's)" >&2
  fi
  machine_cpu_line "${RO:-$OUT}/$name.result.json"
  waits_line "${RO:-$OUT}/$name.result.json"
  sed 's/^/    /' "${RO:-$OUT}/$name.txt" >&2
  if [ -s "${RO:-$OUT}/serve-$name.top.txt" ]; then
    echo "    server profile (serve-$name.pprof), top functions by flat CPU:" >&2
    awk '/flat%/ { on = 1; print "      " $0; next } on && n < 12 { print "      " $0; n++ }' "${RO:-$OUT}/serve-$name.top.txt" >&2
  fi
}

rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$SERVE/status"; }

# idle_phase N [ASKED]: a fresh kbkit serve's RSS before and with N idle
# subscribed windows (ASKED: the count asked for, when the limit cut it).
idle_phase() {
  local n=$1 asked=${2:-$1} r0 r1 got idle
  start_serve "idle-$n"
  # A few windows first, so that the baseline has its pools and buffers.
  $KBKIT loadgen idle --server "$URL" --token "$TOKEN" --windows 50 --hold 1s >/dev/null
  sleep 2
  r0=$(rss)
  $KBKIT loadgen idle --server "$URL" --token "$TOKEN" --windows "$n" >"${RO:-$OUT}/idle-$n.json" 2>"${RO:-$OUT}/idle-$n.log" &
  idle=$!
  waitline "${RO:-$OUT}/idle-$n.json" 600
  sleep 3
  r1=$(rss)
  got=$(jq -r .subscribed "${RO:-$OUT}/idle-$n.json")
  kill "$idle" 2>/dev/null || true
  wait "$idle" 2>/dev/null || true
  stop_serve
  jq -nc --argjson n "$n" --argjson asked "$asked" --argjson got "$got" --argjson r0 "$r0" --argjson r1 "$r1" --argjson open "$(jq .open_seconds "${RO:-$OUT}/idle-$n.json")" \
    '{phase: "idle-\($n)", windows: $n, asked: $asked, subscribed: $got, rss_kb_before: $r0, rss_kb_after: $r1, open_seconds: $open,
      kb_per_window: (if $got > 0 then ($r1 - $r0) / $got else null end)}' >"${RO:-$OUT}/idle-$n.result.json"
  echo "  $n windows: server VmRSS ${r0} kB before, ${r1} kB with $got subscribed windows (opened in $(jq -r '.open_seconds * 10 | round / 10' "${RO:-$OUT}/idle-$n.json")s)" >&2
}
