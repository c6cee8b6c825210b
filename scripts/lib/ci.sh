# scripts/lib/ci.sh — the frame of a ci-*.sh script. Source it (and
# serve.sh if the script runs a server) and call ci_begin NAME: say and die
# print with NAME's prefix; START is the start time; WORK a fresh
# directory. On exit, the script's own ci_on_exit runs first if it defines
# one, then the server of serve.sh, if sourced, is
# stopped and its log printed on failure, and WORK is removed.

ci_begin() {
	CI_NAME=$1
	START=$(date +%s)
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/$CI_NAME.XXXXXX")
	trap ci_cleanup EXIT
}

say() { echo "$CI_NAME: $*" >&2; }
die() {
	echo "$CI_NAME: FAILED: $*" >&2
	exit 1
}

ci_cleanup() {
	local rc=$?
	if declare -F ci_on_exit >/dev/null; then ci_on_exit || true; fi
	if declare -F serve_kill >/dev/null; then
		serve_kill
		[ "$rc" = 0 ] || serve_log_tail
	fi
	rm -rf "$WORK"
	exit "$rc"
}
