#!/usr/bin/env bash
# bench-judge.sh [DIR]: make bench-judge, a make bench-server run judged
# again from the files it kept in DIR (default OUT, default
# out/bench-server): each round's <phase>.result.json and the run's
# floor.json, under the verdict of this checkout (scripts/lib/verdict.jq,
# scripts/lib/rounds.jq). No load runs again. It rewrites DIR/results.json
# (keeping the run's saturation, host and pauses) and each round's, then
# prints the verdict as bench-server does; STRICT as there. Exit 2 when
# DIR holds no bench-server run.
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/.."
OUT=${1:-${OUT:-out/bench-server}}
STRICT=${STRICT:-0}
BENCH=bench-judge
# shellcheck source=lib/verdict.sh
. scripts/lib/verdict.sh

[ -f "$OUT/results.json" ] && [ -f "$OUT/floor.json" ] ||
  { echo "$BENCH: $OUT holds no make bench-server run (it needs results.json and floor.json)" >&2; exit 2; }
PHASE=$(jq -r '.phase_seconds // "?"' "$OUT/results.json")
SERVER=$(jq -r '.host.server_mode // "serve"' "$OUT/results.json")
old=$(mktemp)
trap 'rm -f "$old"' EXIT
cp "$OUT/results.json" "$old"

# judge DIR: one round's verdict from its phases' results.
judge() {
  compgen -G "$1/*.result.json" >/dev/null || { echo "$BENCH: $1 holds no <phase>.result.json" >&2; exit 2; }
  jq -s --arg strict "$STRICT" --argjson phase "$(jq '.phase_seconds // null' "$old")" --slurpfile floor "$OUT/floor.json" \
    -f scripts/lib/verdict.jq "$1"/*.result.json >"$1/results.json.new"
  mv "$1/results.json.new" "$1/results.json"
}

rounds=()
for d in "$OUT"/round-[0-9]*; do [ -d "$d" ] && rounds+=("$d"); done
if [ ${#rounds[@]} -gt 0 ]; then
  for d in "${rounds[@]}"; do judge "$d"; done
  jq -s --argjson rounds "${#rounds[@]}" -f scripts/lib/rounds.jq "${rounds[@]/%//results.json}" >"$OUT/results.json.new"
else
  judge "$OUT"
  cp "$OUT/results.json" "$OUT/results.json.new"
fi
jq --slurpfile old "$old" '. + ($old[0] | {saturation, host, pauses} | with_entries(select(.value != null)))' \
  "$OUT/results.json.new" >"$OUT/results.json"
rm -f "$OUT/results.json.new"
bench_verdict
