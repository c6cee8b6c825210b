#!/usr/bin/env bash
# Shrinks a failing seed against every --broken-server variant of
# kbkit conformance run (embedded reference server behind the breaking
# proxy) and prints the before/after table: steps, windows, pages,
# devices, faults and commands of the first failing seed and of its shrunk
# history, the checker held fixed, and whether the printed replay of the
# shrunk history fails that checker again (run as printed).
#
#   scripts/shrink-broken.sh                 # every variant
#   scripts/shrink-broken.sh reorder ack-seq # some
#   BUDGET=60s OUT=out scripts/shrink-broken.sh
#
# Needs Go and PostgreSQL's server binaries (as `make test`). Outputs
# (choice files, timelines, logs) go to $OUT/shrink-broken.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
BUDGET=${BUDGET:-90s}
dir=$OUT/shrink-broken
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
kbkit=$dir/kbkit
go build -o "$kbkit" ./cmd/kbkit

# The variants the CLI knows (its refusal of an unknown one lists them).
all=$({ "$kbkit" conformance run --server http://127.0.0.1:9 --token x --broken-server '?' 2>&1 || true; } |
	sed -n 's/.*(one of \(.*\))$/\1/p' | tr -d ,)
[ -n "$all" ] || { echo "shrink-broken: could not list the variants" >&2; exit 2; }
variants=${*:-$all}

# The options under which each variant's seeds fail (as in
# sim/broken_test.go and broken_wire_test.go); a broken server
# makes windows wait for echoes that never come, hence the short timeouts.
flags() {
	case $1 in
	skip-dedup | no-duplicate-flag | non-canonical-page) echo --faults --echo-timeout 1s ;;
	lose-cells) echo --steps 200 --echo-timeout 1s ;;
	# Its candidates wait out echo timeouts (the log has holes).
	drop-derived) echo --steps 200 --echo-timeout 1s --shrink-budget 3m ;;
	# Seeds 9-12: seed 1's rejection comes of a merge-page racing an edit,
	# which needs two windows on one page and a second page to merge into:
	# three windows at least, as window i edits page i mod pages. Seed 11
	# races an edit on one page (2 windows).
	drop-rejected-outcomes) echo --faults --steps 150 --echo-timeout 1s --seed 9 ;;
	no-own-echo | renumber | ack-seq) echo --echo-timeout 300ms --seed-timeout 20s ;;
	# One seed: the proxy counts the calls of every seed it serves; each
	# failing candidate waits out its --seed-timeout.
	no-answer) echo --seeds 1 --echo-timeout 300ms --seed-timeout 4s --shrink-budget 4m ;;
	refuse-sockets) echo --windows 2 --echo-timeout 300ms --seed-timeout 20s ;;
	*) echo --echo-timeout 1s ;;
	esac
}

printf '%-24s %4s %-16s %-22s %-22s %-7s %s\n' variant seed checker \
	"before s/w/p/d/f/c" "after s/w/p/d/f/c" replay took
for v in $variants; do
	log=$dir/$v.log
	mkdir -p "$dir/$v"
	start=$(date +%s)
	# shellcheck disable=SC2046 # flags are words
	"$kbkit" conformance run --broken-server "$v" --instances 1 --seed 1 --seeds 4 \
		--shrink-budget "$BUDGET" --out "$dir/$v" --html "$dir/$v" $(flags "$v") >"$log" 2>&1 || true
	took=$(($(date +%s) - start))s
	block=$(sed -n '/^shrunk seed /,/^  replay: /p' "$log")
	if [ -z "$block" ]; then
		why=$(grep -m1 'shrink:\|does not recur\|could not run' "$log" || echo "no failing seed")
		printf '%-24s %4s %-16s %s (%s)\n' "$v" - - "not shrunk: $why" "$took"
		continue
	fi
	seed=$(sed -n 's/^shrunk seed \([0-9]*\): .*/\1/p' <<<"$block")
	checker=$(sed -n 's/^shrunk seed [0-9]*: \([^ ]*\) failed.*/\1/p' <<<"$block")
	row() { awk -v r="$1" '$1 == r { printf "%s/%s/%s/%s/%s/%s", $2, $3, $4, $5, $6, $7 }' <<<"$block"; }
	replay=$(sed -n 's/^  replay: kbkit //p' <<<"$block")
	# The printed line as a shell runs it (from the variant's directory:
	# Porcupine's pages land in the working directory).
	code=0
	(cd "$dir/$v" && eval "\"$kbkit\" $replay") >"$dir/$v.replay.log" 2>&1 || code=$?
	fails=$(awk -v c="$checker" '$1 == c { print $4; exit }' "$dir/$v.replay.log")
	verdict="exit $code"
	[ "$code" = 1 ] && [ "${fails:-0}" -gt 0 ] && verdict=fails
	printf '%-24s %4s %-16s %-22s %-22s %-7s %s\n' "$v" "$seed" "$checker" "$(row before)" "$(row after)" "$verdict" "$took"
done
