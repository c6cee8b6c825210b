# scripts/lib/serve.sh — start and stop one `kbkit serve` for a script.
# Source it after defining die(); it uses SERVER_PID and SERVER_DIR.
#
#   serve_start BIN DIR [serve flags...]   starts BIN serve --addr 127.0.0.1:0 with
#                                          its JSON line in DIR/serve.json and its
#                                          log in DIR/serve.log; waits for the line
#   serve_field NAME                       a string field of that JSON line
#   serve_stop                             SIGTERM; fails unless it exits cleanly
#   serve_kill                             for an EXIT trap: stop it if still running
#                                          (SIGTERM, then SIGKILL after 30 s)
#   serve_log_tail                         the log's last 30 lines, on stderr

SERVER_PID=
SERVER_DIR=

serve_start() {
	local bin=$1
	SERVER_DIR=$2
	shift 2
	# A deterministic provider: local binaries unless the caller chose one
	# (an engine left running must not be picked up by automatic selection).
	if [ -z "${KBKIT_PG:-}" ] && [ -z "${KBKIT_PG_DSN:-}" ]; then
		export KBKIT_PG=local
	fi
	"$bin" serve --addr 127.0.0.1:0 "$@" >"$SERVER_DIR/serve.json" 2>"$SERVER_DIR/serve.log" &
	SERVER_PID=$!
	for _ in $(seq 1 1200); do
		grep -q '^{' "$SERVER_DIR/serve.json" 2>/dev/null && return 0
		kill -0 "$SERVER_PID" 2>/dev/null || die "kbkit serve exited before printing its JSON line"
		sleep 0.1
	done
	die "kbkit serve printed no JSON line within 120 s"
}

serve_field() {
	sed -n 's/^{.*"'"$1"'":"\([^"]*\)".*/\1/p' "$SERVER_DIR/serve.json" | head -n 1
}

serve_stop() {
	local rc=0
	kill -TERM "$SERVER_PID"
	wait "$SERVER_PID" || rc=$?
	SERVER_PID=
	[ "$rc" = 0 ] || die "kbkit serve exited $rc on SIGTERM"
}

serve_kill() {
	if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
		kill -TERM "$SERVER_PID" 2>/dev/null || true
		for _ in $(seq 1 30); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 1; done
		kill -KILL "$SERVER_PID" 2>/dev/null || true
	fi
}

serve_log_tail() {
	if [ -n "$SERVER_DIR" ] && [ -s "$SERVER_DIR/serve.log" ]; then
		echo "---- kbkit serve log (last 30 lines) ----" >&2
		tail -n 30 "$SERVER_DIR/serve.log" >&2 || true
	fi
}
