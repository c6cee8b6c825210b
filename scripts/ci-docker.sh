#!/usr/bin/env bash
# ci-docker.sh — the testcontainers path of CI: run the conformance suite
# against PostgreSQL in a Docker container, with no registry reachable.
#
#  1. Make sure a Docker engine answers (DOCKER_HOST, else the default
#     socket). If none does: install Debian's docker.io when dockerd is
#     missing, then start
#         dockerd --bridge=none --iptables=false --ip-forward=false
#     (no bridge network, no NAT: containers may only use host networking)
#     on a private socket, /run/kbkit-ci-docker/docker.sock, exported as
#     DOCKER_HOST to this script's children only (other programs on the
#     machine, e.g. tests selecting a provider automatically, do not see
#     it), and wait up to 60 s. If it cannot start, fail with its log.
#  2. Build a local image from this machine's PostgreSQL binaries with
#     scripts/pg-image.sh (docker import; no registry).
#  3. Run `kbkit conformance run --seeds $SEEDS --faults` with
#         KBKIT_PG=docker KBKIT_PG_IMAGE=<image> KBKIT_DOCKER_NETWORK=host
#         KBKIT_PG_BIN_IN_IMAGE=/usr/lib/postgresql/<v>/bin
#         TESTCONTAINERS_RYUK_DISABLED=true
#     KBKIT_PG=docker forces the docker provider (it errors, never falls
#     back to local binaries); the script also checks, from the engine's
#     events, that a container of that image really started.
#  4. Stop the dockerd it started (so later steps, which auto-select a
#     provider, do not find an engine without images).
#
# Environment: SEEDS (default 20), PG_VERSION (default: newest installed),
# KBKIT_PG_IMAGE (default kbkit/postgres-local:<v>), KEEP_DOCKERD=1 to leave
# a dockerd started here running, CONFORMANCE_TIMEOUT (default 1500 s).
# Must run as root when it has to install or start the engine.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

SEEDS=${SEEDS:-20}
CONFORMANCE_TIMEOUT=${CONFORMANCE_TIMEOUT:-1500}
. scripts/lib/ci.sh
ci_begin ci-docker
DOCKERD_PID=
EVENTS_PID=
DOCKERD_LOG=$WORK/dockerd.log

ci_on_exit() {
	if [ -n "$EVENTS_PID" ]; then
		kill "$EVENTS_PID" 2>/dev/null || true
		wait "$EVENTS_PID" 2>/dev/null || true
	fi
	if [ -n "$DOCKERD_PID" ] && [ "${KEEP_DOCKERD:-}" != 1 ] && kill -0 "$DOCKERD_PID" 2>/dev/null; then
		say "stopping the dockerd started here (pid $DOCKERD_PID)"
		kill "$DOCKERD_PID" 2>/dev/null || true
		for _ in $(seq 1 30); do
			kill -0 "$DOCKERD_PID" 2>/dev/null || break
			sleep 1
		done
		kill -9 "$DOCKERD_PID" 2>/dev/null || true
	fi
}

# ---- PostgreSQL binaries to package --------------------------------------
if [ -z "${PG_VERSION:-}" ]; then
	PG_VERSION=$(ls -d /usr/lib/postgresql/*/bin/initdb 2>/dev/null |
		sed -E 's#^/usr/lib/postgresql/([^/]+)/bin/initdb$#\1#' | sort -V | tail -1 || true)
fi
[ -n "$PG_VERSION" ] || die "no PostgreSQL server binaries in /usr/lib/postgresql/*/bin (apt-get install -y postgresql)"
say "packaging PostgreSQL $PG_VERSION"

# ---- 1. a Docker engine --------------------------------------------------
engine_answers() { timeout 10 docker info >/dev/null 2>&1; }

if command -v docker >/dev/null 2>&1 && engine_answers; then
	say "a Docker engine already answers; using it"
else
	if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
		[ "$(id -u)" = 0 ] || die "no Docker engine answers and dockerd is not installed; as non-root this script cannot install it (apt-get install -y docker.io)"
		say "installing Debian's docker.io"
		export DEBIAN_FRONTEND=noninteractive
		# Do not let the package start a daemon of its own (with a
		# default bridge network): we start dockerd ourselves below.
		ADDED_POLICY=
		if [ ! -e /usr/sbin/policy-rc.d ]; then
			printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
			chmod 755 /usr/sbin/policy-rc.d
			ADDED_POLICY=1
		fi
		install_rc=0
		{ apt-get update -qq && apt-get install -y -qq --no-install-recommends docker.io >"$WORK/apt.log" 2>&1; } || install_rc=$?
		[ -n "$ADDED_POLICY" ] && rm -f /usr/sbin/policy-rc.d
		if [ "$install_rc" != 0 ]; then
			tail -n 30 "$WORK/apt.log" >&2 || true
			die "apt-get install docker.io failed (exit $install_rc)"
		fi
	fi
	command -v dockerd >/dev/null 2>&1 || die "dockerd not found after installing docker.io"
	[ "$(id -u)" = 0 ] || die "no Docker engine answers and only root can start dockerd"
	SOCK_DIR=/run/kbkit-ci-docker
	mkdir -p "$SOCK_DIR"
	rm -f "$SOCK_DIR/docker.sock"
	export DOCKER_HOST=unix://$SOCK_DIR/docker.sock
	say "starting dockerd --bridge=none --iptables=false --ip-forward=false on $DOCKER_HOST (log: $DOCKERD_LOG)"
	# setsid: its own process group, so it is not hit by signals meant for
	# this script's foreground jobs; we stop it by pid in ci_on_exit.
	setsid dockerd --host "$DOCKER_HOST" --pidfile "$SOCK_DIR/docker.pid" \
		--bridge=none --iptables=false --ip-forward=false \
		>"$DOCKERD_LOG" 2>&1 </dev/null &
	DOCKERD_PID=$!
	ok=
	for _ in $(seq 1 60); do
		if engine_answers; then ok=1; break; fi
		kill -0 "$DOCKERD_PID" 2>/dev/null || break
		sleep 1
	done
	if [ -z "$ok" ]; then
		echo "---- dockerd log (last 40 lines) ----" >&2
		tail -n 40 "$DOCKERD_LOG" >&2 || true
		echo "-------------------------------------" >&2
		if kill -0 "$DOCKERD_PID" 2>/dev/null; then
			die "the Docker engine did not answer \`docker info\` within 60 s"
		fi
		die "dockerd exited before answering (see its log above); the docker CI path cannot run on this machine"
	fi
	say "dockerd is up (pid $DOCKERD_PID, $(docker version --format '{{.Server.Version}}' 2>/dev/null || echo '?'))"
fi

# ---- 2. the image --------------------------------------------------------
IMAGE=${KBKIT_PG_IMAGE:-kbkit/postgres-local:$PG_VERSION}
t0=$(date +%s)
IMAGE=$(scripts/pg-image.sh -v "$PG_VERSION" -t "$IMAGE") || die "scripts/pg-image.sh could not build the image"
say "image $IMAGE built in $(( $(date +%s) - t0 ))s ($(docker image inspect --format '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1/1e6}'))"

# Smoke test: the image runs at all, with host networking.
docker run --rm --network host "$IMAGE" /usr/lib/postgresql/"$PG_VERSION"/bin/postgres --version >&2 ||
	die "a container of $IMAGE does not run (docker run --network host $IMAGE postgres --version)"

# ---- 3. the conformance suite on the docker provider ---------------------
BIN=$WORK/kbkit
go build -o "$BIN" ./cmd/kbkit || die "go build ./cmd/kbkit failed"

# Containers may use host networking only. testcontainers-go creates a
# bridge network "reaper_default" on an engine without "bridge" unless told
# otherwise (server/pgprovider does, for host networking): remove leftovers.
bridges() { docker network ls -q --filter driver=bridge; }
if [ -n "$DOCKERD_PID" ]; then # only on our own engine
	for n in $(docker network ls -q --filter driver=bridge --filter label=org.testcontainers=true); do
		say "removing testcontainers bridge network $n left by an earlier run"
		docker network rm "$n" >/dev/null
	done
fi
ours() { docker ps -aq --no-trunc --filter "ancestor=$IMAGE" | sort; }
if [ -n "$DOCKERD_PID" ] && [ -n "$(ours)" ]; then
	say "removing containers of $IMAGE left by an earlier run"
	ours | xargs -r docker rm -f >/dev/null
fi
CTRS_BEFORE=$(ours)
[ -z "$(bridges)" ] || say "warning: the engine has bridge networks ($(docker network ls --filter driver=bridge --format '{{.Name}}' | paste -sd ' ')); containers here use host networking only"
BRIDGES_BEFORE=$(bridges | sort)

# Record container starts of our image: proof that the docker provider ran.
docker events --filter "image=$IMAGE" --filter event=start --format '{{.ID}}' >"$WORK/events" 2>&1 &
EVENTS_PID=$!
sleep 1

say "kbkit conformance run --seeds $SEEDS --faults with KBKIT_PG=docker KBKIT_PG_IMAGE=$IMAGE KBKIT_DOCKER_NETWORK=host"
t0=$(date +%s)
rc=0
(
	cd "$WORK"
	env KBKIT_PG=docker \
		KBKIT_PG_IMAGE="$IMAGE" \
		KBKIT_DOCKER_NETWORK=host \
		KBKIT_PG_BIN_IN_IMAGE=/usr/lib/postgresql/"$PG_VERSION"/bin \
		TESTCONTAINERS_RYUK_DISABLED=true \
		KBKIT_PG_DSN= \
		timeout --kill-after=30 "$CONFORMANCE_TIMEOUT" \
		"$BIN" conformance run --seeds "$SEEDS" --faults --out "$WORK" --junit "$WORK/conformance.xml"
) || rc=$?
took=$(( $(date +%s) - t0 ))
sleep 1
kill "$EVENTS_PID" 2>/dev/null || true
wait "$EVENTS_PID" 2>/dev/null || true
EVENTS_PID=

started=$(grep -cE '^[0-9a-f]{12,}$' "$WORK/events" || true)
leftover=$(comm -13 <(echo "$CTRS_BEFORE") <(ours) | grep -c . || true)
if [ "$rc" != 0 ]; then
	# Keep the failures' visualisations and the JUnit report.
	for f in "$WORK"/*.html "$WORK"/conformance.xml; do
		if [ -e "$f" ]; then
			mkdir -p "${CI_ARTIFACTS:-/tmp}"
			cp "$f" "${CI_ARTIFACTS:-/tmp}/"
			say "kept ${CI_ARTIFACTS:-/tmp}/$(basename "$f")"
		fi
	done
	[ "$rc" = 124 ] && die "the conformance run timed out after ${CONFORMANCE_TIMEOUT}s"
	die "kbkit conformance run on the docker provider exited $rc after ${took}s"
fi
if [ "$started" -lt 1 ]; then
	cat "$WORK/events" >&2 || true
	die "the run passed but no container of $IMAGE was started: the docker provider was not used"
fi
if [ "$(bridges | sort)" != "$BRIDGES_BEFORE" ]; then
	docker network ls >&2
	die "the run created a bridge network: containers must use host networking only"
fi
if [ "$leftover" != 0 ]; then
	docker ps -a --filter "ancestor=$IMAGE" >&2
	die "the run left $leftover container(s) of $IMAGE behind"
fi
say "conformance: $SEEDS seeds passed on the docker provider in ${took}s ($started container start(s) of $IMAGE, none left behind)"
say "total ${0##*/} time: $(( $(date +%s) - START ))s"
