#!/usr/bin/env bash
# `make test-busy`: `make test` while every core is kept busy by a CPU hog,
# ROUNDS times (default 2), as on a shared CI runner or a laptop during a
# build: tests must judge what is decided and wait on events, not race a
# clock. The hog is stress-ng --cpu N (Debian's stress-ng), or
# scripts/cpuhog where stress-ng is not installed; N is HOG_CPUS (default
# every core: nproc). The hog is ended on every path (exit, failure,
# interrupt) and ends by itself after HOG_LIMIT (default 3h) or when this
# script is gone. Prints each round's time and its exit, and exits 1 if
# any round failed.
# Every round runs every test (GOTESTFLAGS defaults to -count=1: go
# test's cache would answer a second round from the first).
# Environment: ROUNDS, HOG_CPUS, HOG_LIMIT (seconds), HOG (auto,
# stress-ng or cpuhog), MAKE, and what
# scripts/test.sh reads (PKGS, TIMEOUT, LONG_TIMEOUT, GOTESTFLAGS).
set -uo pipefail
cd "$(dirname "$0")/.."
export GOTESTFLAGS=${GOTESTFLAGS:--count=1}
ROUNDS=${ROUNDS:-2}
HOG_CPUS=${HOG_CPUS:-$(nproc)}
HOG_LIMIT=${HOG_LIMIT:-10800}
HOG=${HOG:-auto}
MAKE=${MAKE:-make}
GO=${GO:-go}

hog=""
end_hog() {
	if [ -n "$hog" ]; then
		kill -TERM "$hog" 2>/dev/null
		wait "$hog" 2>/dev/null
		hog=""
	fi
}
trap end_hog EXIT
trap 'end_hog; exit 130' INT TERM

if [ "$HOG" = stress-ng ] || { [ "$HOG" = auto ] && command -v stress-ng >/dev/null; }; then
	what="stress-ng --cpu $HOG_CPUS"
	stress-ng --cpu "$HOG_CPUS" --timeout "${HOG_LIMIT}s" --quiet &
	hog=$!
else
	what="scripts/cpuhog -cpus $HOG_CPUS"
	[ "$HOG" = cpuhog ] || what="$what (stress-ng is not installed: apt-get install stress-ng)"
	bin=$(mktemp -d "${TMPDIR:-/tmp}/kbkit-cpuhog.XXXXXX")/cpuhog
	$GO build -o "$bin" ./scripts/cpuhog || exit 2
	"$bin" -cpus "$HOG_CPUS" -for "${HOG_LIMIT}s" &
	hog=$!
fi
sleep 1
if ! kill -0 "$hog" 2>/dev/null; then
	echo "test-busy: the CPU hog ($what) did not start" >&2
	exit 2
fi
echo "test-busy: $what keeps $HOG_CPUS of $(nproc) cores busy"

rc=0
times=()
for round in $(seq 1 "$ROUNDS"); do
	echo "test-busy: round $round of $ROUNDS: $MAKE test"
	s=$(date +%s)
	r=0
	$MAKE test || r=$?
	t=$(($(date +%s) - s))
	times+=("round $round: ${t} s, exit $r")
	[ "$r" = 0 ] || rc=1
done
end_hog
for t in "${times[@]}"; do echo "test-busy: $t"; done
if [ "$rc" = 0 ]; then
	echo "test-busy: PASS: $ROUNDS rounds of make test passed with $HOG_CPUS cores kept busy"
else
	echo "test-busy: FAIL: a round of make test failed with $HOG_CPUS cores kept busy" >&2
fi
exit "$rc"
