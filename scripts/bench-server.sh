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
#   many-pages commands/s ÷ its bound                >= 0.6
#   hot-page   commands/s ÷ its bound                >= 0.6
#     (a load's bound: the tighter of its CPU ceiling, the commands/s
#     its CPU per command (generator + server + postgres) gives on the
#     cores other processes left it, and its serial chain's, the
#     commands/s of the store's transaction slot kept busy: commands
#     per group transaction over a transaction's time with the slot held)
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
  jq -s --arg strict "$STRICT" --argjson phase "$PHASE" --slurpfile floor "$OUT/floor.json" '
    (map({key: .phase, value: .}) | from_entries) as $p |
    ($floor[0] // {}) as $fl |
    def check(name; kind; value; op; limit; what):
      {name: name, kind: kind, value: value, op: op, limit: limit, what: what,
       met: (if value == null then false elif op == ">=" then value >= limit else value <= limit end)};
    # with_floor(key; value; unit): a check with the floor under its figure (information).
    # with_floor(key; value; unit): the floor under the figure of a check, as
    # information. bounded_by(key; value; unit): a floor the figure cannot go
    # under (the same system calls, one per message): a check whose floor is
    # itself past the limit is out of reach on this machine, reported as such
    # and not counted by STRICT. (The HTTP client floor is information only:
    # the generator does not use net/http for its commands.)
    def with_floor(key; v; unit): if v == null then . else . + {(key): v} | .what += "; floor \(v | if . < 1 then . * 1000 | round / 1000 else . * 10 | round / 10 end) \(unit)" end;
    def bounded_by(key; v; unit): with_floor(key; v; unit)
      | if v != null and (.met | not) and .op == "<=" and v > .limit then . + {out_of_reach: true} else . end;
    def lb($n; f): [($fl.loopback // [])[] | select(.sockets == $n) | f][0];
    def ran(names): all(names[]; $p[.] != null);
    # pgb(name): pgbench run before the load and again after it, as one:
    # the mean of the two (tps, CPU per transaction), so that a slow spell
    # of the shared machine during one side only moves the ratio by half.
    def pgb(n): $p[n] as $a | $p[n + "-after"] as $b |
      if $a == null or $b == null then $a
      else $a + {tps: (($a.tps + $b.tps) / 2), tps_before: $a.tps, tps_after: $b.tps,
        ms_per_transaction: ($a.ms_per_transaction | with_entries(.value = (.value + $b.ms_per_transaction[.key]) / 2))} end;
    # ceiling(phase; n): the machine use of the two sides of a ratio
    # (information beside the verdict): the cores the kbkit load used,
    # those pgbench used (the mean of its two runs), and the commands/s the
    # kbkit load would reach with its CPU per command on every core, as a
    # ratio to pgbench: a round whose ceiling ratio is under the target is
    # bound by CPU per command, whatever the scheduling.
    def ceiling(ph; n): $p[ph].machine_cpu as $m |
      ([$p[n], $p[n + "-after"]] | map(select(. != null) | .machine_cpu.used_cores) | add / length) as $u |
      if ($m.used_cores // 0) > 0 then
        ($p[ph].rate * $m.cores / $m.used_cores) as $c |
        . + {used_cores: $m.used_cores, pgbench_used_cores: $u, ceiling_rate: $c, ceiling_ratio: ($c / pgb(n).tps)}
        | .what += "; cores used \($m.used_cores * 100 | round / 100) of \($m.cores) (pgbench \($u * 100 | round / 100)); on all \($m.cores): \($c | round) commands/s, \($c / pgb(n).tps * 100 | round / 100)× pgbench"
      else . end;
    def tps_what(n): pgb(n) | if .tps_after then "\(.tps * 10 | round / 10) tps (mean of \(.tps_before * 10 | round / 10) before and \(.tps_after * 10 | round / 10) after the load)" else "\(.tps) tps" end;
    # The verdict against the machine itself (targets): each figure over
    # a bound the same run measured of this machine, so that a slower or
    # busier machine moves both sides. bound(ph): the tighter of the two
    # bounds of a load, the commands/s its CPU per command gives on the
    # cores other processes left it, and the bound of its serial chain (the
    # store decides one group transaction at a time: the commands/s of the
    # transaction slot kept busy, from the metrics of the server).
    def bound(ph): $p[ph] as $x | $x.machine_cpu as $m |
      ([$m.cores - $m.others_cores, 0.01] | max) as $left |
      (if ($m.used_cores // 0) > 0 then $x.rate * $left / $m.used_cores else null end) as $cpu |
      ($x.waits.slot_busy_fraction.total // null | if . != null and . > 0 then $x.rate / . else null end) as $chain |
      {cpu: $cpu, chain: $chain, left: $left, tight: ([$cpu, $chain] | map(select(. != null)) | min)};
    def bound_check(ph; limit): bound(ph) as $b | select($b.tight != null) |
      check("\(ph) rate ÷ its bound"; "target"; $p[ph].rate / $b.tight; ">="; limit;
        "\($p[ph].rate * 10 | round / 10) commands/s ÷ \($b.tight | round) (the tighter of its CPU ceiling on the \($b.left * 100 | round / 100) cores others left, \($b.cpu // "n/a" | if type == "number" then round else . end) commands/s, and its serial chain, \($b.chain // "n/a" | if type == "number" then round else . end) commands/s)")
      + {bound_cpu_rate: $b.cpu, bound_chain_rate: $b.chain};
    def http_floor_ms: ($fl.http // null) | if . == null then null else (.client_us_per_request + .server_us_per_request) / 1000 end;
    [ select(ran(["many-pages"])) | bound_check("many-pages"; 0.6) ]
    + [ select(ran(["hot-page"])) | bound_check("hot-page"; 0.6) ]
    + [ ("many-pages", "hot-page") as $ph | select(ran([$ph]) and http_floor_ms != null and $p[$ph].ms_per_command != null) |
        ($p[$ph].ms_per_command | .generator + .server + .postgres) as $c |
        check("\($ph) CPU per command ÷ HTTP floor"; "target"; $c / http_floor_ms; "<="; 6;
          "\($c * 1000 | round / 1000) ms (generator, server and postgres) ÷ \(http_floor_ms * 1000 | round / 1000) ms of CPU per HTTP request (client and server)") ]
    # The ratios to pgbench: context, never a verdict (pgbench with one client
    # is bound by the loopback round trip, with 8 by fsync and CPU; the
    # ratio moves with the machine, not with the code).
    + [ select(ran(["many-pages", "pgbench-c8"])) | check("many-pages ratio"; "info"; $p["many-pages"].rate / pgb("pgbench-c8").tps; ">="; 1.3;
            "\($p["many-pages"].rate * 10 | round / 10) commands/s ÷ \(tps_what("pgbench-c8")), 8 clients") | ceiling("many-pages"; "pgbench-c8")
          | with_floor("floor_round_trip_us"; $fl.roundtrip.us_per_round_trip; "µs per loopback round trip")
    ] + [ select(ran(["hot-page", "pgbench-c1"])) | check("hot-page ratio"; "info"; $p["hot-page"].rate / pgb("pgbench-c1").tps; ">="; 3.5;
            "\($p["hot-page"].rate * 10 | round / 10) commands/s ÷ \(tps_what("pgbench-c1")), 1 client") | ceiling("hot-page"; "pgbench-c1")
          | with_floor("floor_round_trip_us"; $fl.roundtrip.us_per_round_trip; "µs per loopback round trip")
    ] + [ select(ran(["fanout"])) | check("fan-out/commit p99"; "target"; $p.fanout.fanout_p99_ms / $p.fanout.commit_p99_ms; "<="; 1.5;
            "fan-out p99 \($p.fanout.fanout_p99_ms)ms ÷ commit p99 \($p.fanout.commit_p99_ms)ms (200 windows)") ]
    + [ $p | to_entries[] | select(.key | startswith("idle-")) | .value |
        check("RSS per idle window (\(.windows))"; "target"; .kb_per_window; "<="; 20;
              "KB: \(.rss_kb_before) kB -> \(.rss_kb_after) kB for \(.subscribed) windows") ]
    + [ ("fanout", "fanout-2000") as $f | select(ran([$f])) | $p[$f] |
        (check("server µs per echo (\(.windows_per_page) windows)"; "target"; .us_per_echo.server; "<="; 5;
              "\(.cpu_seconds.server)s for \(.counts.echoes) echoes") | bounded_by("floor_us"; lb($p[$f].windows_per_page; .us_per_write); "µs per loopback write")),
        (check("generator µs per echo (\(.windows_per_page) windows)"; "goal"; .us_per_echo.generator; "<="; 10;
              "\(.cpu_seconds.generator * 100 | round / 100)s for \(.counts.echoes) echoes") | bounded_by("floor_us"; lb($p[$f].windows_per_page; .us_per_read); "µs per loopback read")) ]
    + [ select(ran(["many-pages", "pgbench-c8"])) | (check("server ms per command (many-pages)"; "goal"; $p["many-pages"].ms_per_command.server; "<="; 0.15; "server process")
          | bounded_by("floor_ms"; $fl.http.server_us_per_request | if . then . / 1000 else null end; "ms per HTTP request served")),
        check("postgres ms per command (many-pages)"; "goal"; $p["many-pages"].ms_per_command.postgres; "<=";
              (pgb("pgbench-c8").ms_per_transaction.postgres / 2); "half of pgbench 8 clients: \(pgb("pgbench-c8").ms_per_transaction.postgres * 10000 | round / 10000) ms per transaction"),
        (check("generator ms per command (many-pages)"; "goal"; $p["many-pages"].ms_per_command.generator; "<="; 0.10; "generator process")
          | with_floor("floor_ms"; $fl.http.client_us_per_request | if . then . / 1000 else null end; "ms per HTTP request sent"))
    ] + [ select(ran(["hot-page"])) | check("generator ms per command (hot-page)"; "goal"; $p["hot-page"].ms_per_command.generator; "<="; 0.10; "generator process") ]
    + [ $p | to_entries[] | select(.value.counts_agree == false) | .value |
        {name: "counts of \(.phase)", kind: "target", value: null, op: "==", limit: null, what: "\(.counts)", met: false} ]
    | {phase_seconds: $phase, strict: $strict, floors: $fl, phases: $p, checks: .,
       missed_targets: map(select(.kind == "target" and (.met | not) and (.out_of_reach | not)) | .name),
       missed_goals: map(select(.kind == "goal" and (.met | not) and (.out_of_reach | not)) | .name),
       out_of_reach: map(select(.out_of_reach) | .name)}
   ' "$RO"/*.result.json >"$RO/results.json"
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
  jq -s --argjson rounds "$ROUNDS" '
    def median: sort | if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end;
    (.[0] | {phase_seconds, strict, floors}) + {rounds: $rounds, round_results: map({phases, checks})} +
    {checks: ([.[].checks[]] | group_by(.name) | map(
        (map(.value) | map(select(. != null))) as $v |
        (map(.limit) | map(select(type == "number"))) as $l |
        (.[0] + {values: map(.value), min: ($v | min), max: ($v | max), value: (if ($v | length) > 0 then $v | median else null end)}
          + (if ($l | length) > 0 then {limit: ($l | median)} else {} end)
          + (map(.ceiling_ratio | select(. != null)) as $c |
             if ($c | length) > 0 then {ceiling_ratio: ($c | median), ceiling_ratios: map(.ceiling_ratio),
               used_cores: (map(.used_cores | select(. != null)) | median),
               pgbench_used_cores: (map(.pgbench_used_cores | select(. != null)) | median)} else {} end)) |
        .met = (if .value == null then false elif .op == ">=" then .value >= .limit elif .op == "<=" then .value <= .limit else .met end) |
        .out_of_reach = (.out_of_reach and (.met | not)) |
        .what = "median of \(.values | length) (\(.values | map(if . == null then "n/a" else . * 1000 | round / 1000 | tostring end) | join(", ")))\(if .ceiling_ratios then "; ceiling \(.ceiling_ratios | map(if . == null then "n/a" else . * 100 | round / 100 | tostring end) | join(", "))× pgbench" else "" end); round 1: \(.what)"))} |
    .missed_targets = (.checks | map(select(.kind == "target" and (.met | not) and (.out_of_reach | not)) | .name)) |
    .missed_goals = (.checks | map(select(.kind == "goal" and (.met | not) and (.out_of_reach | not)) | .name)) |
    .out_of_reach = (.checks | map(select(.out_of_reach) | .name))
  ' "$OUT"/round-*/results.json >"$OUT/results.json"
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

echo
echo "== results (PHASE=${PHASE}s, server: $SERVER; files in $OUT, all figures in $OUT/results.json)"
jq -r '.checks[] | "\(.kind | . + " " * (6 - length))  \(.name | . + " " * (40 - length))  \(if .value == null then "n/a" else (.value * 1000 | round / 1000 | tostring) end | . + " " * (9 - length)) \(.op) \(.limit // "" | if type == "number" then (. * 1000 | round / 1000) else . end)   \(if .kind == "info" then "context" elif .met then "met" elif .out_of_reach then "BELOW FLOOR" else "MISSED" end)   \(.what)"' "$OUT/results.json"
jq -r '.pauses[] | "paused: round \(.round), attempt \(.attempt): the machine stood still for \(.seconds)s; the round ran again"' "$OUT/results.json"
echo "profiles: go tool pprof -top bin/kbkit $OUT/serve-<phase>.pprof (server), $OUT/<phase>.pprof (generator); reports: $OUT/<phase>.html"

missed_targets=$(jq '.missed_targets | length' "$OUT/results.json")
missed_goals=$(jq '.missed_goals | length' "$OUT/results.json")
counts_bad=$(jq '[.checks[] | select(.name | startswith("counts of"))] | length' "$OUT/results.json")
if [ "$counts_bad" -gt 0 ]; then
  echo "bench-server: the counts of a load disagree" >&2
  exit 1
fi
out_of_reach=$(jq -r '.out_of_reach | join(", ")' "$OUT/results.json")
[ -z "$out_of_reach" ] || echo "bench-server: out of reach on this machine (its floor is past the limit; STRICT does not count them): $out_of_reach" >&2
case "$STRICT" in
  1 | true | yes) [ "$missed_targets" -eq 0 ] || { echo "bench-server: STRICT: $missed_targets target(s) missed" >&2; exit 1; } ;;
  all) [ $((missed_targets + missed_goals)) -eq 0 ] || { echo "bench-server: STRICT=all: $missed_targets target(s) and $missed_goals goal(s) missed" >&2; exit 1; } ;;
esac
exit 0
