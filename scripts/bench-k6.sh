#!/usr/bin/env bash
# bench-k6.sh — one workload driven by kbkit loadgen and by k6 with the
# kbkit extension, side by side, against one kbkit serve: the same
# editors, rate and length, each generator in its own process. Prints the
# committed rate, the latency percentiles and the CPU each generator
# spends per committed command (its process's user+system time during the
# load, and over its whole life, setup and convergence included).
#
#   make k6 && scripts/bench-k6.sh            # RATE=100 EDITORS=16 PHASE=20
#   RATE=400 ROUNDS=2 scripts/bench-k6.sh
#
# The k6 run's latency thresholds are lifted (KBKIT_P99): a slow moment
# is a figure here, not a failure. Files in /tmp/kbkit-bench-k6 (kbkit
# JSON results, k6 outputs).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

RATE=${RATE:-100}
EDITORS=${EDITORS:-16}
PHASE=${PHASE:-20}
ROUNDS=${ROUNDS:-1}
OUT=${OUT:-/tmp/kbkit-bench-k6}
mkdir -p "$OUT"

say() { echo "bench-k6: $*" >&2; }
die() { echo "bench-k6: FAILED: $*" >&2; exit 1; }

[ -x bin/k6-kbkit ] || die "bin/k6-kbkit is missing: make k6"
go build -o bin/kbkit ./cmd/kbkit

. scripts/lib/serve.sh
trap serve_kill EXIT
serve_start bin/kbkit "$OUT"
export KBKIT_URL KBKIT_TOKEN
KBKIT_URL=$(serve_field url)
KBKIT_TOKEN=$(serve_field token)
say "server at $KBKIT_URL; hot-page, $EDITORS editors, $RATE commands/s, ${PHASE}s, $ROUNDS round(s)"

# whole NAME CMD...: runs CMD, keeping its process's user+system seconds.
whole() {
	local name=$1
	shift
	local TIMEFORMAT='%U %S'
	{ time "$@" >"$OUT/$name.out" 2>&1; } 2>"$OUT/$name.time" || { cat "$OUT/$name.out" >&2; die "$name failed"; }
}

# row NAME: one line of the table from the kbkit result NAME.json.
row() {
	local name=$1 rep
	rep=$(bin/kbkit loadgen report "$OUT/$name.json")
	echo "$rep" >"$OUT/$name.txt"
	awk -v name="$name" -v whole="$(awk '{print $1 + $2}' "$OUT/$name.time")" '
		/ committed \(/ { for (i = 1; i <= NF; i++) if ($i == "committed") { n = $(i - 1); r = $(i + 1) } }
		$1 == "commit" { c50 = $3; c99 = $5 }
		$1 == "fanout" { f99 = $5 }
		$1 == "cpu" { cpu = $2; per = $(NF - 4) }
		END {
			gsub(/[(),\/s]/, "", r)
			printf "%-16s %9s %8s %9s %9s %9s %8s %9.3f\n", name, r, c50, c99, f99, cpu, per, 1000 * whole / n
		}' <<<"$rep"
}

printf "%-16s %9s %8s %9s %9s %9s %8s %9s\n" generator "commits/s" "commit50" "commit99" "fanout99" "cpu load" "ms/cmd" "ms/cmd*"
for round in $(seq 1 "$ROUNDS"); do
	whole "loadgen-$round" bin/kbkit loadgen run --server "$KBKIT_URL" --token "$KBKIT_TOKEN" --quiet \
		--workload hot-page --editors "$EDITORS" --rate "$RATE" --duration "${PHASE}s" --json "$OUT/loadgen-$round.json"
	row "loadgen-$round"
	whole "k6-$round" env KBKIT_RATE="$RATE" KBKIT_EDITORS="$EDITORS" KBKIT_DURATION="${PHASE}s" KBKIT_P99=1e9 \
		KBKIT_JSON="$OUT/k6-$round.json" bin/k6-kbkit run --quiet --no-color --address '' examples/k6/hot-page.js
	row "k6-$round"
done
echo "ms/cmd: the generator's CPU during the load per committed command; ms/cmd*: over its whole process (setup, convergence and exit too)"
