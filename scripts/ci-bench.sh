#!/usr/bin/env bash
# ci-bench.sh — make bench-server still runs and says what it measured
# (its verdict is not judged here: CI's machine is shared and a load of
# two seconds is no figure):
#
#  1. PHASES=many-pages, two rounds of 2 s loads: exit 0, the counts of
#     every load agree (else bench-server exits 1), and OUT/results.json
#     has the many-pages ratio with a value, the ceiling of each round
#     (ceiling_ratios, the cores each side used), a median over the two
#     rounds, and the list of pauses (empty unless the host paused this
#     machine, which the run then survives by running the round again);
#  2. a second run into the same OUT (one round of 1 s, the windows'
#     commands on their WebSockets: COMMANDS=ws) replaces the first's
#     files and round directories, and its load says how it sent them;
#     without COMMANDS, many-pages sent them over HTTP (the first run)
#     and the hot page sends them on the WebSockets (a third run);
#  3. the verdict is judged against the machine (each load's rate over
#     the bound the run's floors give it, CPU per command over the HTTP
#     floor: targets; the ratios to pgbench: context) and results.json
#     names the host; bench-judge judges the kept run again to the
#     same verdict, and the same run with its many-pages load a fifth as
#     fast (its rate cut) misses "rate ÷ machine bound", and with its
#     transaction slot working half as long a group misses "rate ÷ chain
#     bound", under STRICT=1 (the targets can fail);
#     PHASES="hot-page saturation" finds the hot page's saturation point
#     (kbkit loadgen find-max, 1 s steps) into results.json, and
#     scripts/bench-page.sh writes the benchmark page from it;
#  4. ATTEMPTS=0, COMMANDS=grpc and an empty COMMANDS are refused (exit
#     2) before anything runs.
#
# Needs what make bench-server needs: Go, PostgreSQL 15 and pgbench, jq.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

. scripts/lib/ci.sh
ci_begin ci-bench
R=$WORK/bench-server/results.json

PHASES=many-pages PHASE=2 WARMUP=1 FLOOR=1 ROUNDS=2 OUT=$WORK make bench-server >"$WORK/run1.log" 2>&1 ||
  { tail -40 "$WORK/run1.log" >&2; die "make bench-server (two rounds) exited non-zero"; }
jq -e '.rounds == 2 and (.pauses | type == "array")' "$R" >/dev/null || die "results.json lacks rounds or pauses: $(head -c 400 "$R")"
jq -e '.checks[] | select(.name == "many-pages ratio") | .value > 0 and (.values | length) == 2
    and (.ceiling_ratios | length) == 2 and all(.ceiling_ratios[]; . > 0) and .used_cores > 0 and .pgbench_used_cores > 0' "$R" >/dev/null ||
  die "the many-pages ratio lacks its values or its ceiling: $(jq -c '.checks[] | select(.name == "many-pages ratio")' "$R")"
for r in 1 2; do
  jq -e '.phases["many-pages"].counts_agree and .phases["many-pages"].rate > 0 and (.phases["many-pages"].paused_seconds | type == "number")' \
    "$WORK/bench-server/round-$r/results.json" >/dev/null || die "round $r: no many-pages load with agreeing counts"
done
jq -e '.run.commands == "http"' "$WORK/bench-server/round-1/many-pages.json" >/dev/null ||
  die "without COMMANDS, many-pages did not send its commands over HTTP: $(jq -c .run "$WORK/bench-server/round-1/many-pages.json")"
jq -e '(.checks[] | select(.name == "many-pages ratio") | .kind == "info")
    and (.checks[] | select(.name == "many-pages rate ÷ machine bound") | .kind == "target" and .value > 0 and (.values | length) == 2)
    and (.checks[] | select(.name == "many-pages CPU per command ÷ HTTP floor") | .kind == "target" and .value > 0)
    and (.checks[] | select(.name == "many-pages rate ÷ chain bound") | .kind == "target" and .value > 0 and .value <= 1)
    and (.host.cores > 0 and (.host.commit | length) > 0)' "$R" >/dev/null ||
  die "the verdict against the machine (the load's bound, CPU per command ÷ HTTP floor), the ratio as context or the host is missing: $(jq -c '[.checks[] | {name, kind, value}], .host' "$R")"
# The kept run judged again: the same checks; then the same run with its
# many-pages load a fifth as fast (what a server five times slower would
# have measured on the same machine) misses the target under STRICT=1.
cp -r "$WORK/bench-server" "$WORK/judged"
bash scripts/bench-judge.sh "$WORK/judged" >"$WORK/judge.log" 2>&1 || { cat "$WORK/judge.log" >&2; die "bench-judge exited non-zero on the run just kept"; }
diff <(jq -c '[.checks[] | {name, value, met}]' "$R") <(jq -c '[.checks[] | {name, value, met}]' "$WORK/judged/results.json") >&2 ||
  die "bench-judge judged the kept run otherwise than make bench-server did"
for r in 1 2; do
  f=$WORK/judged/round-$r/many-pages.result.json
  jq '.rate /= 5' "$f" >"$f.new" && mv "$f.new" "$f"
done
if STRICT=1 bash scripts/bench-judge.sh "$WORK/judged" >"$WORK/judge.log" 2>&1; then
  cat "$WORK/judge.log" >&2; die "a many-pages load a fifth as fast passed STRICT=1: the target cannot fail"
fi
jq -e '.missed_targets | index("many-pages rate ÷ machine bound")' "$WORK/judged/results.json" >/dev/null ||
  die "a many-pages load a fifth as fast did not miss 'many-pages rate ÷ machine bound': $(jq -c .missed_targets "$WORK/judged/results.json")"
# The same run with its transaction slot working half as long a group
# (held idle the rest: what a server that sleeps in the slot measures)
# misses "rate ÷ chain bound" under STRICT=1.
cp -r "$WORK/bench-server" "$WORK/idle-slot"
for r in 1 2; do
  f=$WORK/idle-slot/round-$r/many-pages.result.json
  jq '.waits.slot_busy_fraction.postgres /= 2 | .waits.slot_busy_fraction.planning /= 2' "$f" >"$f.new" && mv "$f.new" "$f"
done
if STRICT=1 bash scripts/bench-judge.sh "$WORK/idle-slot" >"$WORK/judge.log" 2>&1; then
  cat "$WORK/judge.log" >&2; die "a many-pages load whose slot worked half as long passed STRICT=1: the chain target cannot fail"
fi
jq -e '.missed_targets | index("many-pages rate ÷ chain bound")' "$WORK/idle-slot/results.json" >/dev/null ||
  die "a many-pages load whose slot worked half as long did not miss 'many-pages rate ÷ chain bound': $(jq -c .missed_targets "$WORK/idle-slot/results.json")"
if OUT=$WORK/nothing-here bash scripts/bench-judge.sh >"$WORK/judge.log" 2>&1; then die "bench-judge judged a directory with no run"; fi
say "two rounds: many-pages ratio $(jq '.checks[] | select(.name == "many-pages ratio") | .value * 1000 | round / 1000' "$R"), ceilings $(jq -c '.checks[] | select(.name == "many-pages ratio") | .ceiling_ratios | map(. * 100 | round / 100)' "$R"), pauses $(jq -c .pauses "$R")"

COMMANDS=ws PHASES=many-pages PHASE=1 WARMUP=1 FLOOR=1 OUT=$WORK make bench-server >"$WORK/run2.log" 2>&1 ||
  { tail -40 "$WORK/run2.log" >&2; die "a second make bench-server into the same OUT exited non-zero"; }
[ ! -e "$WORK/bench-server/round-1" ] || die "the second run left the first's round directories"
jq -e '(.rounds == null) and (.phases["many-pages"].rate > 0)' "$R" >/dev/null || die "the second run's results.json is not its own"
jq -e '.run.commands == "ws" and .counts.committed > 0' "$WORK/bench-server/many-pages.json" >/dev/null ||
  die "COMMANDS=ws: the load did not send its commands on the WebSockets: $(jq -c .run "$WORK/bench-server/many-pages.json")"

PHASES="hot-page saturation" SATURATION_WORKLOADS=hot-page SATURATION_STEP=1s PHASE=1 WARMUP=1 FLOOR=1 OUT=$WORK make bench-server >"$WORK/run3.log" 2>&1 ||
  { tail -40 "$WORK/run3.log" >&2; die "make bench-server (hot page, saturation) exited non-zero"; }
jq -e '.saturation["hot-page"] | (.sustainable_rate | type == "number") and .steps > 0 and (.why | length) > 0
    and (.next_rate == null or .next_rate > .sustainable_rate)' "$R" >/dev/null ||
  die "no saturation point of the hot page in results.json: $(jq -c .saturation "$R")"
scripts/bench-page.sh "$R" "$WORK/page.md" >&2 || die "scripts/bench-page.sh failed"
for want in "## The machine" "## Verdict" "| hot-page rate ÷ machine bound | target |" "## Saturation" "| hot-page (" "fdatasync after"; do
  grep -qF "$want" "$WORK/page.md" || die "the benchmark page lacks '$want'"
done
grep -Eq '^\| commit \| [0-9a-f]{7,}( \(with uncommitted changes\))? \|$' "$WORK/page.md" || die "the benchmark page does not name the commit: $(grep '^| commit' "$WORK/page.md")"
say "saturation: $(jq -r '.saturation["hot-page"] | "\(.sustainable_rate)/s, limited by \(.limited_by // "nothing")"' "$R"); page $(wc -l <"$WORK/page.md") lines"
jq -e '.run.commands == "ws" and .counts.committed > 0' "$WORK/bench-server/hot-page.json" >/dev/null ||
  die "without COMMANDS, the hot page did not send its commands on the WebSockets: $(jq -c .run "$WORK/bench-server/hot-page.json")"
grep -q "sent over ws" "$WORK/run3.log" || die "the hot page's load line does not say how it sent its commands: $(grep 'loadgen:' "$WORK/run3.log")"

if ATTEMPTS=0 OUT=$WORK bash scripts/bench-server.sh >"$WORK/run3.log" 2>&1; then die "ATTEMPTS=0 was taken"; fi
grep -q "ATTEMPTS is" "$WORK/run3.log" || die "ATTEMPTS=0 refused without saying why: $(cat "$WORK/run3.log")"
for c in grpc ""; do
  if COMMANDS=$c OUT=$WORK bash scripts/bench-server.sh >"$WORK/run4.log" 2>&1; then die "COMMANDS='$c' was taken"; fi
  grep -q "COMMANDS is" "$WORK/run4.log" || die "COMMANDS='$c' refused without saying why: $(cat "$WORK/run4.log")"
done

say "passed in $(($(date +%s) - START)) s"
