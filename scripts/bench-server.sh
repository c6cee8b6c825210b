#!/usr/bin/env bash
# make bench-server: kbkit's reference server side by side with the
# physical limit, pgbench, on one local PostgreSQL started for the run
# (fsync and synchronous_commit on: the same settings for both sides).
#
#   1. pgbench TPC-B, 8 clients   | kbkit loadgen many-pages: 1,000 pages, 8 writers, closed model
#   2. pgbench TPC-B, 1 client    | kbkit loadgen hot-page:   1 page, 8 writers, closed model
#      (the windows' commands on their WebSockets unless COMMANDS says otherwise)
#      (pgbench runs before the load and again after it; a ratio's tps is
#      the mean of the two, so that a slow spell of the shared machine
#      that hits one side only moves the ratio by half, whichever side)
#   3. fan-out: 200 windows on one page at 100 commands/s (open model)
#   4. fan-out: 2,000 windows on one page at 10 commands/s (open model; the
#      same 20,000 echoes/s over ten times the sockets)
#   5. kbkit serve + kbkit loadgen idle: server RSS per idle subscribed
#      window at 5,000 and at 20,000 windows (a fresh server each)
#   6. saturation (once, after the rounds): kbkit loadgen find-max per
#      workload (hot-page, many-pages) against a fresh kbkit serve: the
#      highest open-model rate with commit p99 under SATURATION_P99
#
# and prints the figures with their targets (the "done when" of the
# performance work; STRICT=1 exits 1 when one is missed), each judged
# against what the same run measured of this machine:
#   many-pages commands/s ÷ its machine bound       >= 0.25
#   hot-page   commands/s ÷ its machine bound       >= 0.25
#     (a load's machine bound, from the run's floors, never from the
#     load's own figures: the tighter of the cores other processes left
#     it, each doing one command per HTTP request floor of CPU, and its
#     writers over the time of one durable commit, an fdatasync and two
#     loopback round trips; scripts/lib/verdict.jq)
#   commands/s ÷ its chain bound                     >= 0.5 (many-pages, hot-page)
#     (the serial chain's own bound: the commands of a group over the
#     time the store's transaction slot held a group working, Postgres
#     and planning, not gathering; the share of the load the slot worked)
#   CPU per command ÷ HTTP request floor             <= 6 (many-pages, hot-page)
#     (generator + server + postgres, over the CPU of one HTTP round
#     trip, client and server, of kbkit bench floor)
#   fan-out p99 ÷ commit p99 (200 windows, 100/s)    <= 1.5
#   RSS per idle subscribed window                   <= 20 KB (each count)
#   server CPU per echo delivered (each fan-out)     <= 5 µs
# and the goals per process (STRICT=all also fails on these):
#   server CPU per command, many-pages               <= 0.15 ms
#   postgres CPU per command, many-pages             <= half of pgbench's per transaction (8 clients)
#   generator CPU per command (many-pages, hot-page) <= 0.10 ms
#   generator CPU per echo received (each fan-out)   <= 10 µs
# pgbench's ratios are printed as information ("info", never a verdict:
# pgbench with one client is bound by the loopback round trip, with 8 by
# fsync and CPU, so the ratio moves with the machine, not with the code):
#   many-pages commands/s ÷ pgbench tps (8 clients), hot-page ÷ 1 client
# Beside each ratio (information, never a check): the cores each side
# used, and the commands/s the kbkit load would reach with its CPU per
# command (generator + server + postgres) on every core, as a ratio to
# pgbench's tps (ceiling_rate, ceiling_ratio): a round whose ratio misses
# while its ceiling clears the target left cores idle; one whose ceiling
# misses too needs less CPU per command.
# Every load's counts must agree (operations = committed + rejected +
# refused by the window + errors; events received = committed × windows of
# the page): a disagreement fails whatever STRICT says. A figure whose
# floor on this machine (kbkit bench floor: the cheapest program doing the
# same work, e.g. one loopback write per echo) is itself past the limit is
# reported "BELOW FLOOR", listed under out_of_reach in results.json, and
# not counted by STRICT.
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
# Each kbkit load also says where its commands' time went, from kbkit
# serve's metrics scraped as the measured load begins and ends (spec/
# PROTOCOL.md section 9; scripts/lib/waits.jq) and PostgreSQL's WAL
# flushes (pg_stat_wal): commands per transaction (their distribution)
# and per WAL flush (with each flush's fdatasync time and the share of the
# phase spent flushing, when the server times them: track_wal_io_timing,
# turned on for a server the run started; pgbench's phases print the same
# for their transactions), the share of optimistic, usual and lone
# transactions, a command's time in the server (queued for its page, in
# the store, in transport and parsing), a transaction's (waiting for
# Postgres, planning with the page held), and how busy the transaction
# slot was (Postgres, planning, gathering the next group). Under "waits"
# in each phase's result.
#
# ROUNDS=N runs every phase N times, in rounds (each phase once per
# round, so that a slow spell of the shared machine hits every phase
# alike), each round's files in OUT/round-K; OUT/results.json then has
# each check's median over the rounds with its values, min and max (a
# limit taken from the round, half of pgbench's, is the median of the
# rounds' too), and STRICT judges the median.
#
# A round during which the machine stood still (the wall clock ran ahead
# of the kernel's uptime by 1 s or more: a virtual machine snapshotted or
# migrated) runs again, at most ATTEMPTS times in all (default 3; then the
# run fails with no verdict): nothing ran during the pause, and caches are
# cold and timers late for seconds after it. Each such pause is listed
# under "pauses" in OUT/results.json, and each load's paused_seconds (the
# generator's own reading of the two clocks) is in its result.
#
# Before the loads, `kbkit bench floor` measures the machine's floors
# (information beside the figures, never a check): the CPU of one loopback
# TCP write and read of 200 bytes at each fan-out phase's socket count and
# 20,000 messages/s (under "server µs per echo" and "generator µs per
# echo": one WebSocket write per echo per window), the fdatasync rate of
# the data directory's disk (the most commits per second of one WAL
# writer), the CPU of one HTTP round trip (under each command's) and the
# latency of a loopback round trip between two processes, one at a time
# (beside both ratios: on a virtual machine whose idle processors halt,
# each wake-up waits for the host, and pgbench's one client waits for one
# at every statement). Every
# phase also prints the CPU it used of the machine: (generator + server +
# postgres CPU seconds) ÷ (nproc × seconds), and how busy the whole machine
# was (/proc/stat; on shared cores the difference is other users).
#
# Environment: PHASE (measured seconds per phase, default 20), WARMUP
# (unmeasured seconds before each load, default 3; pgbench likewise leaves
# out connection time), FLOOR (measured seconds per floor, default 5), OUT
# (results, default out/bench-server in this checkout, ignored by git),
# KBKIT_PG (provider, default local; with dsn, the databases the run makes
# on the given server are dropped at exit), ROUNDS (default 1), ATTEMPTS
# (default 3), IDLE_WINDOWS (counts, default
# "5000 20000"), SERVER (serve or embedded), COMMANDS (how the generator's
# windows send their commands in every phase: http, a POST each; ws, a
# mutation on the window's WebSocket, whose reply the server writes with
# the events of the command's transaction; unset, each phase its own:
# HOT_COMMANDS (ws) on the hot page, where it costs the two processes
# less CPU per command, http elsewhere; loadgen/results/
# 2026-12-05-one-write-per-group-on-a-hot.json), STRICT (1: exit 1 on a missed
# target; all: on a missed goal too), PHASES (the phases to run, default
# all: "many-pages hot-page fanout fanout-2000 idle saturation"; the checks
# of a phase not run are left out), SATURATION_WORKLOADS (default "hot-page
# many-pages"), SATURATION_P99 (find-max's commit p99 objective, default
# 50ms), SATURATION_STEP (its steps' length, default 5s). Each load leaves in OUT its JSON, text and HTML
# report, the generator's CPU profile (<phase>.pprof) and the server's
# (serve-<phase>.pprof, its top in serve-<phase>.top.txt); every figure is
# also in OUT/results.json (the floors under "floors", from OUT/floor.json;
# each phase's machine_cpu; each check with a floor has floor_us or
# floor_ms).
set -euo pipefail
shopt -s inherit_errexit

PHASE=${PHASE:-20}
FLOOR=${FLOOR:-5}
WARMUP=${WARMUP:-3}
IDLE_WINDOWS=${IDLE_WINDOWS:-5000 20000}
SERVER=${SERVER:-serve}
STRICT=${STRICT:-0}
ATTEMPTS=${ATTEMPTS:-3}
[[ $ATTEMPTS =~ ^[1-9][0-9]*$ ]] || { echo "bench-server: ATTEMPTS is the most runs of a round the machine paused in: a whole number from 1, not '$ATTEMPTS'" >&2; exit 2; }
if [[ -v COMMANDS ]]; then
  [[ $COMMANDS == http || $COMMANDS == ws ]] || { echo "bench-server: COMMANDS is how the windows send their commands: http or ws (or unset: each phase its own), not '$COMMANDS'" >&2; exit 2; }
  export COMMANDS
fi
HOT_COMMANDS=ws # the hot page's own, when COMMANDS is unset
PHASES=${PHASES:-many-pages hot-page fanout fanout-2000 idle saturation}
want() { [[ " $PHASES " == *" $1 "* ]]; }
export KBKIT_PG=${KBKIT_PG:-local}
cd "$(dirname "$0")/.."
OUT=${OUT:-out/bench-server}
mkdir -p "$OUT"
# The code measured, for the benchmark page: the commit the run began on.
BENCH_COMMIT=$(git rev-parse HEAD 2>/dev/null || echo unknown)
[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] || BENCH_COMMIT+=" (with uncommitted changes)"
# A run before this one's files, and its rounds' (ROUNDS) directories.
find "$OUT" -maxdepth 1 -type f -delete
rm -rf "$OUT"/round-[0-9]*

BENCH=bench-server
# shellcheck source=lib/bench.sh
. scripts/lib/bench.sh
# shellcheck source=lib/verdict.sh
. scripts/lib/verdict.sh

want idle || IDLE_WINDOWS=
maxidle=0
for n in $IDLE_WINDOWS; do [ "$n" -gt "$maxidle" ] && maxidle=$n; done
bench_ulimit "$maxidle"
counts=
for n in $IDLE_WINDOWS; do
  counts="$counts $(bench_fit "$n")"
done
IDLE_WINDOWS=${counts# }
bench_tools pgbench psql jq go curl
bench_build
bench_pg

# The machine's floors, once (information, not checks): the loopback
# write and read under each fan-out phase's echoes (its socket count, its
# 20,000 echoes/s), the fdatasync rate under one WAL writer, the HTTP
# round trip's CPU under each command, and the latency of a loopback
# round trip between two processes (the wake-ups every closed-loop
# caller waits for: pgbench's client at each statement, an editor at
# each command).
sockets=
want fanout && sockets=200
want fanout-2000 && sockets=${sockets:+$sockets,}2000
floors=fsync,http,roundtrip
[ -z "$sockets" ] || floors=loopback,$floors
bench_floor "$floors" --sockets "${sockets:-200}" --rate 20000 --size 200 --duration "${FLOOR}s" --warmup 1s --http-rate 2000 --http-concurrency 8

create_db pgbench
PGB=$(dbdsn pgbench)
pgbench -i -q -s 8 "$PGB" >"$OUT/pgbench-init.txt" 2>&1

# pgbench_phase CLIENTS NAME: writes OUT/NAME.result.json.
pgbench_phase() {
  local t0 t1 t2 tps TIMEFORMAT='%U %S'
  scrape "${RO:-$OUT}/$2.wal0.json"
  t0=$(date +%s.%N)
  { time pgbench -n -c "$1" -j "$(($1 < 2 ? 1 : 2))" -T "$PHASE" "$PGB" >"${RO:-$OUT}/$2.txt" 2>&1; } 2>"${RO:-$OUT}/$2.time"
  t1=$(date +%s.%N)
  scrape "${RO:-$OUT}/$2.wal1.json"
  sleep 0.3 # the sampler sees the exited connections in the postmaster's children time
  tps=$(awk '/^tps = / { print $3; exit }' "${RO:-$OUT}/$2.txt")
  t2=$(date +%s.%N)
  awk -v tps="$tps" -v s="$PHASE" -v pg="$(cpu "$t0" "$t2" 2)" -v cl="$1" -v name="$2" '{ c = $1 + $2 } END {
      n = tps * s
      printf "  pgbench TPC-B, %d client(s)%s: %.1f tps; cpu over %ss: pgbench %.1fs, postgres %.1fs = %.3f / %.3f ms per transaction\n", cl, name ~ /-after$/ ? ", after the load" : "", tps, s, c, pg, 1000 * c / n, 1000 * pg / n > "/dev/stderr"
      printf "{\"phase\":\"%s\",\"clients\":%d,\"tps\":%s,\"seconds\":%s,\"cpu_seconds\":{\"pgbench\":%.2f,\"postgres\":%.2f},\"ms_per_transaction\":{\"pgbench\":%.4f,\"postgres\":%.4f}}\n", name, cl, tps, s, c, pg, 1000 * c / n, 1000 * pg / n
    }' "${RO:-$OUT}/$2.time" >"${RO:-$OUT}/$2.tmp.json"
  # The machine's share: pgbench and PostgreSQL over the phase's wall time
  # (connections included, as the CPU is).
  jq -c --argjson m "$(machine_cpu_json "$(jq '.cpu_seconds.pgbench + .cpu_seconds.postgres' "${RO:-$OUT}/$2.tmp.json")" "$(cpu "$t0" "$t1" 4)" \
    "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')")" '. + {machine_cpu: $m}' "${RO:-$OUT}/$2.tmp.json" >"${RO:-$OUT}/$2.result.json"
  rm -f "${RO:-$OUT}/$2.tmp.json"
  # Its WAL flushes, counted as the kbkit loads' waits count them
  # (waits.jq; a transaction in place of a command).
  jq -nc --slurpfile m0 "${RO:-$OUT}/$2.wal0.json" --slurpfile m1 "${RO:-$OUT}/$2.wal1.json" \
    --argjson s "$PHASE" --argjson n "$(jq '.tps * .seconds' "${RO:-$OUT}/$2.result.json")" -f scripts/lib/waits.jq |
    jq -c --slurpfile r "${RO:-$OUT}/$2.result.json" '$r[0] + {waits: {wal_flushes, transactions_per_wal_flush: .commands_per_wal_flush, ms_per_wal_flush, wal_flush_fraction}}' \
    >"${RO:-$OUT}/$2.tmp.json" && mv "${RO:-$OUT}/$2.tmp.json" "${RO:-$OUT}/$2.result.json"
  jq -r 'def ms: . * 100 | round / 100 | tostring; .waits | select(.wal_flushes > 0) |
    "  waits: \(.transactions_per_wal_flush * 10 | round / 10) transactions per WAL flush" +
      (if .ms_per_wal_flush then " (fdatasync \(.ms_per_wal_flush | ms) ms each, WAL flushing \(.wal_flush_fraction * 100 | round)% of the time)" else "" end)' \
    "${RO:-$OUT}/$2.result.json" >&2
  machine_cpu_line "${RO:-$OUT}/$2.result.json"
  if [ "$2" = pgbench-c1 ] && [ -s "$OUT/floor.json" ]; then
    jq -r '.fsync | "  floor: fdatasync after an 8 KiB write \(.ops_per_second | round)/s (\(.us_per_op | round) µs each): the most commits per second of one WAL writer"' "$OUT/floor.json" >&2
    jq -r '.roundtrip // empty | "  floor: a loopback round trip between two processes \(.us_per_round_trip * 10 | round / 10) µs (p99 \(.p99_us | round)): what the client waits for at each statement, besides the work"' "$OUT/floor.json" >&2
  fi
}

# run_round: every phase asked for, once, into RO, and the verdicts of
# that round in RO/results.json.
run_round() {
  if want many-pages; then
    echo "== 1. many pages: pgbench 8 clients | loadgen 1,000 pages, 8 writers, closed"
    pgbench_phase 8 pgbench-c8
    loadgen_phase many-pages --workload many-pages --pages 1000 --editors 8 --model closed
    pgbench_phase 8 pgbench-c8-after
  fi

  if want hot-page; then
    echo "== 2. hot page: pgbench 1 client | loadgen 1 page, 8 writers, closed, commands over ${COMMANDS:-$HOT_COMMANDS}"
    pgbench_phase 1 pgbench-c1
    PHASE_COMMANDS=$HOT_COMMANDS loadgen_phase hot-page --workload hot-page --editors 8 --model closed
    pgbench_phase 1 pgbench-c1-after
  fi

  if want fanout; then
    echo "== 3. fan-out: 200 windows on one page at 100 commands/s (open model)"
    loadgen_phase fanout --workload hot-page --editors 200 --rate 100
  fi

  if want fanout-2000; then
    echo "== 4. fan-out: 2,000 windows on one page at 10 commands/s (open model)"
    loadgen_phase fanout-2000 --workload hot-page --editors 2000 --rate 10
  fi

  [ -z "$IDLE_WINDOWS" ] || echo "== 5. memory: kbkit serve with idle subscribed windows ($IDLE_WINDOWS)"
  for n in $IDLE_WINDOWS; do
    idle_phase "$n"
  done

  # The verdicts: every phase's result, the targets and goals, in one JSON.
  jq -s --arg strict "$STRICT" --argjson phase "$PHASE" --slurpfile floor "$OUT/floor.json" \
    -f scripts/lib/verdict.jq "$RO"/*.result.json >"$RO/results.json"
}

# run_round_unpaused: run_round, again (at most ATTEMPTS times in all,
# default 3) while the machine stood still during it: a paused virtual
# machine (snapshotted, migrated) runs nothing for the pause, and its
# caches are cold and its timers late for seconds after, so the round's
# figures are not those of a running machine (one many-pages load here ran
# at half its rate after a 31 s pause). Each pause is listed under
# "pauses" in OUT/results.json; a round paused in every attempt fails the
# run, with no verdict.
run_round_unpaused() {
  local attempt w0 u0 p
  for ((attempt = 1; attempt <= $ATTEMPTS; attempt++)); do
    ATTEMPT=$((attempt > 1 ? attempt : 0)) # a fresh database for each attempt (start_serve)
    [ "$ATTEMPT" -gt 0 ] || ATTEMPT=
    read -r w0 u0 < <(clocks)
    run_round
    p=$(paused_since "$w0" "$u0")
    [ "$p" = 0 ] && return 0
    jq -nc --argjson r "${ROUND:-1}" --argjson a "$attempt" --argjson s "$p" '{round: $r, attempt: $a, seconds: $s}' >>"$OUT/pauses.jsonl"
    echo "$BENCH: the machine stood still for ${p}s during this round (the wall clock ran that far ahead of the uptime: a virtual machine snapshotted or migrated); its figures are not those of a running machine" >&2
    [ "$attempt" -lt "$ATTEMPTS" ] && echo "== round ${ROUND:-1} again (attempt $((attempt + 1)) of $ATTEMPTS)"
  done
  echo "$BENCH: the machine stood still during each of $ATTEMPTS attempts at round ${ROUND:-1}: no verdict" >&2
  exit 1
}

ROUNDS=${ROUNDS:-1}
if [ "$ROUNDS" -gt 1 ]; then
  for ((ROUND = 1; ROUND <= ROUNDS; ROUND++)); do
    RO=$OUT/round-$ROUND
    mkdir -p "$RO"
    echo "== round $ROUND of $ROUNDS (files in $RO)"
    run_round_unpaused
  done
  # The median of each check over the rounds, with its spread; STRICT
  # judges the median.
  jq -s --argjson rounds "$ROUNDS" -f scripts/lib/rounds.jq "$OUT"/round-*/results.json >"$OUT/results.json"
else
  RO=$OUT
  ROUND=
  run_round_unpaused
fi
# The saturation point of each workload, once (after the rounds): kbkit
# loadgen find-max against a fresh kbkit serve, open-model steps of
# SATURATION_STEP until commit p99 passes SATURATION_P99 or the server
# falls behind its schedule; its verdict (the sustainable rate, the step
# that broke the objective, what ran out there) goes under "saturation" in
# OUT/results.json. Information, never a check.
: >"$OUT/saturation.jsonl"
if want saturation; then
  for w in ${SATURATION_WORKLOADS:-hot-page many-pages}; do
    echo "== saturation: kbkit loadgen find-max --workload $w --threshold 'commit.p99<${SATURATION_P99:-50ms}'"
    if [ "$SERVER" = embedded ]; then
      target=(--dsn "")
      export KBKIT_PG_DSN="$ADMIN"
    else
      start_serve "saturation-$w"
      target=(--server "$URL" --token "$TOKEN")
    fi
    rc=0
    KBKIT_PG=dsn $KBKIT loadgen find-max "${target[@]}" --workload "$w" --threshold "commit.p99<${SATURATION_P99:-50ms}" \
      --step "${SATURATION_STEP:-5s}" --json "$OUT/saturation-$w.json" --html "$OUT/saturation-$w.html" \
      >"$OUT/saturation-$w.txt" 2>"$OUT/saturation-$w.log" || rc=$?
    [ "$SERVER" = embedded ] || stop_serve
    # 99: no step met the objective, a finding like any other.
    [ "$rc" = 0 ] || [ "$rc" = 99 ] || { cat "$OUT/saturation-$w.log" >&2; bench_die "kbkit loadgen find-max --workload $w exited $rc"; }
    sed 's/^/  /' "$OUT/saturation-$w.txt" >&2
    jq -c --arg w "$w" '{($w): (.verdict + {objective, steps: (.steps | length), step: .run.duration, editors: .run.editors,
      pages: .run.pages, windows_per_page: .run.windows_per_page, commands: .run.commands})}' "$OUT/saturation-$w.json" >>"$OUT/saturation.jsonl"
  done
fi
jq --slurpfile s "$OUT/saturation.jsonl" '. + {saturation: ($s | add // {})}' "$OUT/results.json" >"$OUT/results.tmp.json" && mv "$OUT/results.tmp.json" "$OUT/results.json"

# The machine and the code, for the benchmark page (make bench-page).
jq --arg date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --arg commit "$BENCH_COMMIT" \
  --arg cpu "$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)" --argjson cores "$NPROC" \
  --arg kernel "$(uname -sr)" --arg mem "$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo 2>/dev/null)" \
  --arg pg "$(psql "$ADMIN" -Atc 'show server_version' 2>/dev/null)" \
  --arg settings "synchronous_commit=$(psql "$ADMIN" -Atc 'show synchronous_commit' 2>/dev/null) fsync=$(psql "$ADMIN" -Atc 'show fsync' 2>/dev/null) shared_buffers=$(psql "$ADMIN" -Atc 'show shared_buffers' 2>/dev/null)" \
  --arg server "$SERVER" --argjson warmup "$WARMUP" \
  '. + {host: {date: $date, commit: $commit, cpu: $cpu, cores: $cores, kernel: $kernel, memory: $mem, postgres: $pg,
    postgres_settings: $settings, server_mode: $server, warmup_seconds: $warmup}}' \
  "$OUT/results.json" >"$OUT/results.tmp.json" && mv "$OUT/results.tmp.json" "$OUT/results.json"

# The pauses that made a round run again.
jq --slurpfile p <(cat "$OUT/pauses.jsonl" 2>/dev/null || true) '. + {pauses: $p}' "$OUT/results.json" >"$OUT/results.tmp.json" && mv "$OUT/results.tmp.json" "$OUT/results.json"

bench_verdict
