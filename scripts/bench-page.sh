#!/usr/bin/env bash
# bench-page.sh — the benchmark page, generated from make bench-server's
# results.json (scripts/lib/bench-page.jq): the machine and its floors, the
# verdict, per-page (serial) and aggregate rates, fan-out, memory per
# window and the saturation point of each workload. Every figure comes
# from the file.
#
#   scripts/bench-page.sh [RESULTS [PAGE]]
#
# RESULTS defaults to out/bench-server/results.json, PAGE to
# benchmarks.md beside it. A missing or unreadable RESULTS exits 2 and
# writes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
RESULTS=${1:-out/bench-server/results.json}
PAGE=${2:-$(dirname "$RESULTS")/benchmarks.md}
command -v jq >/dev/null 2>&1 || { echo "bench-page: jq is required" >&2; exit 2; }
[ -s "$RESULTS" ] || { echo "bench-page: no results at $RESULTS (run make bench-server first)" >&2; exit 2; }
jq -e '.checks | type == "array"' "$RESULTS" >/dev/null 2>&1 ||
  { echo "bench-page: $RESULTS is not make bench-server's results.json" >&2; exit 2; }
tmp=$(mktemp "${PAGE}.XXXXXX")
trap 'rm -f "$tmp"' EXIT
jq -r -f scripts/lib/bench-page.jq "$RESULTS" >"$tmp"
mv "$tmp" "$PAGE"
echo "bench-page: wrote $PAGE from $RESULTS"
