# verdict.sh: the verdict of make bench-server's OUT/results.json, printed
# and turned into an exit status (scripts/bench-server.sh,
# scripts/bench-judge.sh). Sourced; uses OUT, STRICT, PHASE and SERVER.
#
#   bench_verdict   prints every check, the pauses and the profiles; exits
#                   1 when a load's counts disagree (whatever STRICT says)
#                   or STRICT misses a target (STRICT=all: a goal too), else 0

bench_verdict() {
  echo
  echo "== results (PHASE=${PHASE}s, server: $SERVER; files in $OUT, all figures in $OUT/results.json)"
  jq -r '.checks[] | "\(.kind | . + " " * (6 - length))  \(.name | . + " " * (40 - length))  \(if .value == null then "n/a" else (.value * 1000 | round / 1000 | tostring) end | . + " " * (9 - length)) \(.op) \(.limit // "" | if type == "number" then (. * 1000 | round / 1000) else . end)   \(if .kind == "info" then "context" elif .met then "met" elif .out_of_reach then "BELOW FLOOR" else "MISSED" end)   \(.what)"' "$OUT/results.json"
  jq -r '(.pauses // [])[] | "paused: round \(.round), attempt \(.attempt): the machine stood still for \(.seconds)s; the round ran again"' "$OUT/results.json"
  echo "profiles: go tool pprof -top bin/kbkit $OUT/serve-<phase>.pprof (server), $OUT/<phase>.pprof (generator); reports: $OUT/<phase>.html"

  local missed_targets missed_goals counts_bad out_of_reach
  missed_targets=$(jq '.missed_targets | length' "$OUT/results.json")
  missed_goals=$(jq '.missed_goals | length' "$OUT/results.json")
  counts_bad=$(jq '[.checks[] | select(.name | startswith("counts of"))] | length' "$OUT/results.json")
  if [ "$counts_bad" -gt 0 ]; then
    echo "$BENCH: the counts of a load disagree" >&2
    exit 1
  fi
  out_of_reach=$(jq -r '.out_of_reach | join(", ")' "$OUT/results.json")
  [ -z "$out_of_reach" ] || echo "$BENCH: out of reach on this machine (its floor is past the limit; STRICT does not count them): $out_of_reach" >&2
  case "$STRICT" in
    1 | true | yes) [ "$missed_targets" -eq 0 ] || { echo "$BENCH: STRICT: $missed_targets target(s) missed" >&2; exit 1; } ;;
    all) [ $((missed_targets + missed_goals)) -eq 0 ] || { echo "$BENCH: STRICT=all: $missed_targets target(s) and $missed_goals goal(s) missed" >&2; exit 1; } ;;
  esac
  exit 0
}
