# scripts/lib/ci.sh — the frame of a ci-*.sh script that runs a server.
# Source it, then serve.sh, and call ci_begin NAME: say and die print with
# NAME's prefix; START is the start time; WORK a fresh directory; on exit
# the server (serve.sh) is stopped, its log printed on failure, and WORK
# removed.

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
	serve_kill
	[ "$rc" = 0 ] || serve_log_tail
	rm -rf "$WORK"
	exit "$rc"
}
