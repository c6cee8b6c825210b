# scripts/lib/dockerd.sh — a Docker engine for a script (sourced; needs
# $WORK, say and die). dockerd_ensure uses the engine that answers at
# DOCKER_HOST (else the default socket); when none does and dockerd is
# installed (Debian's docker.io; installed here with apt as root when
# missing), it starts one of its own, as scripts/ci-docker.sh does:
#
#   dockerd --bridge=none --iptables=false --ip-forward=false
#
# (host networking only, no NAT) on a private socket, data root and exec
# root under /var/lib/kbkit-docker and /run/kbkit-docker, so that it never
# shares state with another engine on the machine, exported as DOCKER_HOST
# to the script's children only. dockerd_stop stops an engine started here
# (call it from ci_on_exit); one that was already running is left alone.
DOCKERD_PID=

dockerd_answers() { timeout 10 docker info >/dev/null 2>&1; }

dockerd_ensure() {
	command -v docker >/dev/null 2>&1 && dockerd_answers && { say "using the Docker engine that answers"; return 0; }
	if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
		[ "$(id -u)" = 0 ] || die "no Docker engine answers and dockerd is not installed (apt-get install -y docker.io)"
		say "installing Debian's docker.io"
		local added=
		if [ ! -e /usr/sbin/policy-rc.d ]; then
			printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && added=1
		fi
		local rc=0
		{ DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker.io >"$WORK/apt.log" 2>&1; } || rc=$?
		[ -n "$added" ] && rm -f /usr/sbin/policy-rc.d
		[ "$rc" = 0 ] || { tail -n 30 "$WORK/apt.log" >&2; die "apt-get install docker.io failed (exit $rc)"; }
	fi
	[ "$(id -u)" = 0 ] || die "no Docker engine answers and only root can start dockerd"
	local run=/run/kbkit-docker
	mkdir -p "$run" /var/lib/kbkit-docker
	rm -f "$run/docker.sock"
	export DOCKER_HOST=unix://$run/docker.sock
	say "starting dockerd --bridge=none --iptables=false on $DOCKER_HOST (log: $WORK/dockerd.log)"
	setsid dockerd --host "$DOCKER_HOST" --pidfile "$run/docker.pid" --exec-root "$run/exec" \
		--data-root /var/lib/kbkit-docker --bridge=none --iptables=false --ip-forward=false \
		>"$WORK/dockerd.log" 2>&1 </dev/null &
	DOCKERD_PID=$!
	local _
	for _ in $(seq 1 60); do
		dockerd_answers && { say "dockerd is up (pid $DOCKERD_PID)"; return 0; }
		kill -0 "$DOCKERD_PID" 2>/dev/null || break
		sleep 1
	done
	tail -n 40 "$WORK/dockerd.log" >&2 || true
	die "the Docker engine did not answer within 60 s (its log is above)"
}

dockerd_stop() {
	[ -n "$DOCKERD_PID" ] || return 0
	if kill -0 "$DOCKERD_PID" 2>/dev/null; then
		say "stopping the dockerd started here (pid $DOCKERD_PID)"
		kill "$DOCKERD_PID" 2>/dev/null || true
		local _
		for _ in $(seq 1 30); do kill -0 "$DOCKERD_PID" 2>/dev/null || break; sleep 1; done
		kill -9 "$DOCKERD_PID" 2>/dev/null || true
	fi
	DOCKERD_PID=
}
