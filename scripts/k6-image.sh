#!/usr/bin/env bash
# k6-image.sh — the k6-kbkit image, built with no registry: the static
# bin/k6-kbkit (`make k6`, CGO_ENABLED=0) FROM scratch
# (scripts/image/k6.Dockerfile; the context from scripts/lib/image.sh),
# built by the classic builder of the Docker engine at DOCKER_HOST (else
# the default socket). Prints the tag on success, after checking that a
# container of it runs `k6 version` with host networking.
#
#   make k6-image                      # make k6, then this script
#   scripts/k6-image.sh -t TAG -b BIN
#
# It starts no engine: without one answering it fails (scripts/ci-k6.sh
# starts its own with scripts/lib/dockerd.sh before calling it).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

usage() {
	cat <<USAGE
usage: $(basename "$0") [-t TAG] [-b BINARY] [-h]

  -t TAG     image tag (default k6-kbkit:scratch)
  -b BINARY  the k6 binary with kbkit's extension, statically linked
             (default bin/k6-kbkit, from \`make k6\`)
  -h         this help
USAGE
}

TAG=k6-kbkit:scratch
BIN=bin/k6-kbkit
while getopts ':t:b:h' opt; do
	case "$opt" in
	t) TAG=$OPTARG ;;
	b) BIN=$OPTARG ;;
	h) usage; exit 0 ;;
	:) echo "k6-image.sh: -$OPTARG needs an argument" >&2; usage >&2; exit 2 ;;
	*) echo "k6-image.sh: unknown option -$OPTARG" >&2; usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || { echo "k6-image.sh: unexpected arguments: $*" >&2; usage >&2; exit 2; }

. scripts/lib/ci.sh
ci_begin k6-image
. scripts/lib/image.sh

[ -x "$BIN" ] || die "$BIN not found or not executable (make k6)"
# FROM scratch has no dynamic loader: the binary must be static. Go
# records CGO_ENABLED in the binary's build settings.
if command -v go >/dev/null 2>&1; then
	go version -m "$BIN" 2>/dev/null | grep -q 'CGO_ENABLED=0' ||
		die "$BIN was not built with CGO_ENABLED=0 (make k6 builds it so): it would not run FROM scratch"
fi
command -v docker >/dev/null 2>&1 || die "the docker CLI is required"
timeout 10 docker info >/dev/null 2>&1 || die "no Docker engine answers at ${DOCKER_HOST:-the default socket} (start one; scripts/ci-k6.sh starts its own as root)"

CTX=$WORK/context
image_context "$CTX"
cp "$BIN" "$CTX/k6"
cp scripts/image/k6.Dockerfile "$CTX/Dockerfile"
image_build "$CTX" "$TAG"
got=$(docker run --rm --network host "$TAG" version) || die "docker run $TAG version failed"
grep -q 'k6/x/kbkit' <<<"$got" || die "$TAG's k6 has no k6/x/kbkit extension: $got"
say "$TAG: $(head -n 1 <<<"$got"), $(docker image inspect --format '{{.Size}}' "$TAG") bytes"
echo "$TAG"
