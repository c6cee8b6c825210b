#!/usr/bin/env bash
# make bench-scaling: how kbkit serve's figures move with the load, on one
# local PostgreSQL started for the run (fsync and synchronous_commit on), a
# fresh `kbkit serve` per point, as in bench-server.sh
# (scripts/lib/bench.sh):
#
#   1. many-pages, 1,000 pages, closed model, at 1, 2, 4, 8, 16 writers:
#      commands/s, commit p50/p99, CPU ms per command of generator, server
#      and PostgreSQL;
#   2. fan-out, hot page, open model, 20,000 echoes/s each: 200 windows at
#      100 commands/s, 2,000 at 10/s, 10,000 at 2/s: server and generator
#      µs per echo, fan-out p50/p99; beside each the loopback floor at the
#      same sockets and rate (`kbkit bench floor`: CPU per write and per
#      read of a 200-byte message);
#   3. server RSS per idle subscribed window at 5,000 and 20,000 windows.
#
# Each point prints the CPU it used of the machine ((generator + server +
# postgres CPU s) ÷ (nproc × s)) and how busy the whole machine was. The
# table goes to OUT/scaling.md, every figure to OUT/scaling.json.
#
# A window is one socket on each side: a count past `ulimit -n` (the hard
# limit, less 1,000 for everything else) is measured at the most the limit
# allows, and the table says so.
#
# Environment: PHASE (measured seconds per point, default 10), WARMUP
# (default 3), FLOOR (measured seconds per floor, default 5), WRITERS
# (default "1 2 4 8 16"), FANOUT (windows:commands/s, default
# "200:100 2000:10 10000:2"), IDLE_WINDOWS (default "5000 20000"), OUT
# (default out/bench-scaling), KBKIT_PG (default local), SERVER (serve or
# embedded).
set -euo pipefail
shopt -s inherit_errexit

PHASE=${PHASE:-10}
WARMUP=${WARMUP:-3}
FLOOR=${FLOOR:-5}
WRITERS=${WRITERS:-1 2 4 8 16}
FANOUT=${FANOUT:-200:100 2000:10 10000:2}
IDLE_WINDOWS=${IDLE_WINDOWS:-5000 20000}
SERVER=${SERVER:-serve}
export KBKIT_PG=${KBKIT_PG:-local}
cd "$(dirname "$0")/.."
OUT=${OUT:-out/bench-scaling}
mkdir -p "$OUT"
rm -f "$OUT"/*

BENCH=bench-scaling
# shellcheck source=lib/bench.sh
. scripts/lib/bench.sh

maxw=0
for p in $IDLE_WINDOWS $FANOUT; do [ "${p%%:*}" -gt "$maxw" ] && maxw=${p%%:*}; done
bench_ulimit "$maxw"
bench_tools psql jq go
bench_build
bench_pg

# The fan-out points, each "asked:measured:rate" (measured < asked when
# ulimit -n cuts it), and the loopback floors at their socket counts.
points=
sockets=
for p in $FANOUT; do
  w=${p%%:*}
  r=${p##*:}
  m=$(bench_fit "$w")
  points="$points $w:$m:$r"
  sockets=${sockets:+$sockets,}$m
done
bench_floor loopback,fsync,http --sockets "$sockets" --rate 20000 --size 200 --duration "${FLOOR}s" --warmup 1s --http-rate 2000 --http-concurrency 8

echo "== 1. many pages: 1,000 pages, closed model, writers: $WRITERS"
for n in $WRITERS; do
  echo "-- $n writer(s)"
  loadgen_phase "many-pages-$n" --workload many-pages --pages 1000 --editors "$n" --model closed
done

echo "== 2. fan-out: hot page, open model:$(for p in $points; do IFS=: read -r w m r <<<"$p"; printf ' %s windows at %s/s' "$m" "$r"; done)"
for p in $points; do
  IFS=: read -r w m r <<<"$p"
  echo "-- $m windows at $r commands/s$([ "$m" = "$w" ] || echo " (asked $w; ulimit -n $(ulimit -n))")"
  loadgen_phase "fanout-$m" --workload hot-page --editors "$m" --rate "$r"
  jq -c --argjson asked "$w" '. + {asked: $asked}' "$OUT/fanout-$m.result.json" >"$OUT/fanout-$m.tmp" && mv "$OUT/fanout-$m.tmp" "$OUT/fanout-$m.result.json"
done

echo "== 3. memory: kbkit serve with idle subscribed windows ($IDLE_WINDOWS)"
for n in $IDLE_WINDOWS; do
  idle_phase "$(bench_fit "$n")" "$n"
done

# Every figure in one JSON, then the markdown table.
shopt -s nullglob
jq -n --arg date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --argjson phase "$PHASE" --argjson warmup "$WARMUP" --argjson nproc "$NPROC" \
  --arg host "$(uname -n)" --argjson ulimit "$(ulimit -n)" --arg commit "$(git rev-parse --short HEAD 2>/dev/null || true)" \
  --slurpfile floor "$OUT/floor.json" \
  --slurpfile mp <(cat /dev/null "$OUT"/many-pages-*.result.json) \
  --slurpfile fo <(cat /dev/null "$OUT"/fanout-*.result.json) \
  --slurpfile idle <(cat /dev/null "$OUT"/idle-*.result.json) '
  ($floor[0]) as $fl |
  def lb($n; f): [($fl.loopback // [])[] | select(.sockets == $n) | f][0];
  {date: $date, commit: $commit, host: $host, nproc: $nproc, ulimit_n: $ulimit, phase_seconds: $phase, warmup_seconds: $warmup,
   floors: $fl,
   many_pages: ($mp | sort_by(.editors) | map({writers: .editors, pages, rate, commit_p50_ms, commit_p99_ms,
                                               ms_per_command, cpu_seconds, machine_cpu, counts_agree, paused_seconds})),
   fanout: ($fo | sort_by(.windows_per_page) | map({windows: .windows_per_page, asked, rate, due: .counts.due, dropped: .counts.dropped, echoes_per_second: (.counts.echoes / .seconds),
                                                   us_per_echo, fanout_p50_ms, fanout_p99_ms, commit_p99_ms,
                                                   floor_us: {write: lb(.windows_per_page; .us_per_write), read: lb(.windows_per_page; .us_per_read)},
                                                   cpu_seconds, machine_cpu, counts_agree, paused_seconds})),
   idle: ($idle | sort_by(.windows))}' >"$OUT/scaling.json"

jq -r --argjson u "$(ulimit -n)" -f scripts/lib/scaling-table.jq "$OUT/scaling.json" >"$OUT/scaling.md"
# A load during which the machine stood still (paused_seconds: a virtual
# machine snapshotted) is no figure of a running machine: say which.
jq -r '(.many_pages[] | select((.paused_seconds // 0) > 0) | "many-pages, \(.writers) writer(s)"), (.fanout[] | select((.paused_seconds // 0) > 0) | "fan-out, \(.windows) windows")' "$OUT/scaling.json" |
  while read -r what; do echo "$BENCH: the machine stood still during the load of $what (paused_seconds in scaling.json): run it again before reading its figures" >&2; done

echo
echo "== scaling (files in $OUT: scaling.md, scaling.json)"
cat "$OUT/scaling.md"
if jq -e '[.many_pages[], .fanout[] | select(.counts_agree == false)] | length > 0' "$OUT/scaling.json" >/dev/null; then
  echo "bench-scaling: the counts of a load disagree" >&2
  exit 1
fi
