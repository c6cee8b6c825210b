#!/usr/bin/env bash
# `make test`'s go test: every package of the module with an explicit
# -timeout, in two groups run side by side:
#   - the long packages (LONG: real Postgres, many seeds, client and
#     adapter processes; minutes each) with LONG_TIMEOUT (default 30m),
#   - every other package with TIMEOUT (default 10m).
# The timeouts are hang detectors: they fit a machine kept busy by other
# work (scripts/test-busy.sh), where tests take several times what they
# take on a quiet one; no test relies on them to pass.
# The long group's output streams; the other group's is printed as one
# block when it ends (the two never interleave mid-package). Then the
# wall time of each group. Exit 1 if either failed.
# Environment: GO, TIMEOUT, LONG_TIMEOUT, LONG (package paths relative to
# the module), PKGS (the package patterns, default ./...), GOTESTFLAGS
# (extra flags for go test, e.g. -count=1).
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
TIMEOUT=${TIMEOUT:-10m}
LONG_TIMEOUT=${LONG_TIMEOUT:-30m}
LONG=${LONG:-"sim sim/cli wiresuite wiresuite/cli speckit/cli pgfault docs"}
read -r -a extra <<<"${GOTESTFLAGS:-}"

mod=$($GO list -m) || exit 2
read -r -a patterns <<<"${PKGS:-./...}"
pkgs=$($GO list "${patterns[@]}") || exit 2
long=() short=()
for p in $pkgs; do
	rel=${p#"$mod"}
	rel=${rel#/}
	if [[ " $LONG " == *" $rel "* ]]; then
		long+=("$p")
	else
		short+=("$p")
	fi
done

log=$(mktemp "${TMPDIR:-/tmp}/kbkit-test.XXXXXX")
pids=()
stop() {
	# Each group's go test (a child of its subshell), then the subshells.
	for p in "${pids[@]}"; do pkill -TERM -P "$p" 2>/dev/null; kill -TERM "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -f "$log"
	exit 130
}
trap stop INT TERM

start=$(date +%s)
(
	s=$(date +%s)
	rc=0
	if [ ${#short[@]} -gt 0 ]; then
		$GO test "${extra[@]}" -timeout "$TIMEOUT" "${short[@]}" >"$log" 2>&1 || rc=$?
	fi
	echo "test: ${#short[@]} packages (-timeout $TIMEOUT) in $(($(date +%s) - s)) s, exit $rc" >>"$log"
	exit "$rc"
) &
pids+=($!)
short_pid=$!
(
	s=$(date +%s)
	rc=0
	if [ ${#long[@]} -gt 0 ]; then
		$GO test "${extra[@]}" -timeout "$LONG_TIMEOUT" "${long[@]}" || rc=$?
	fi
	echo "test: the long packages (${LONG}; -timeout $LONG_TIMEOUT) in $(($(date +%s) - s)) s, exit $rc"
	exit "$rc"
) &
pids+=($!)
long_pid=$!

rc=0
wait "$short_pid" || rc=1
short_done=$(date +%s)
wait "$long_pid" || rc=1
cat "$log"
rm -f "$log"
echo "test: all $((${#short[@]} + ${#long[@]})) packages in $(($(date +%s) - start)) s (the others ended after $((short_done - start)) s)"
if [ -n "${KBKIT_SKIP_LONG:-}" ]; then
	echo "test: the long tests (internal/longtest) were skipped: make test-long runs them"
fi
exit "$rc"
