#!/usr/bin/env bash
# ci-release.sh — make release offline, and what each thing it publishes
# can do where a team uses it (it replaces ci-dist.sh in .ci/run and runs
# its checks on the release's binaries):
#
#  1. make release with GOPROXY=off into a fresh OUT (CHANGELOG.md must
#     have the dated section of version.Kit): binaries, image tarball,
#     npm tarball, RELEASE-NOTES.md, SHA256SUMS;
#  2. scripts/ci-dist.sh on those binaries (DIST=...): SHA256SUMS checks,
#     each is a static OS/ARCH build, the linux/amd64 one runs spec run,
#     export, --impl, matrix and adapter without Go or Postgres;
#  3. the image: removed from the engine and loaded back from the release's
#     tarball; with host networking only, `version --short` is version.Kit,
#     `spec run` passes every case from the binary alone (no checkout in
#     the image), and `conformance protocol --server` passes the HTTP and
#     WebSocket checks against a kbkit serve on the host's loopback,
#     writing its JUnit into a mounted directory as the calling user;
#  4. scripts/ci-action.sh against the release served over loopback HTTP;
#  5. `go install github.com/subspace/kbkit/cmd/kbkit@vX.Y.Z` offline,
#     through a module proxy directory serving this checkout as the tag:
#     `kbkit version` of what it installs says the tag's version.
#
# Environment: CHANGELOG (default CHANGELOG.md), TARGETS (as dist.sh);
# RELEASE=DIR checks a release built before instead of building one.
# Needs Go with a filled module cache, Node.js 20+ and npm, curl,
# PostgreSQL's server binaries, and Docker (dockerd is started here on a
# private socket when none answers; root).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

. scripts/lib/ci.sh
. scripts/lib/serve.sh
ci_begin ci-release
. scripts/lib/dockerd.sh
# The module cache go install fills is read-only: make it removable.
ci_on_exit() { serve_kill; dockerd_stop; [ ! -d "$WORK/modcache" ] || chmod -R u+w "$WORK/modcache"; }

VERSION=$(sed -nE 's/^[[:space:]]*(const[[:space:]]+)?Kit[[:space:]]*=[[:space:]]*"([^"]+)".*/\2/p' internal/version/version.go | head -n 1)
R=$WORK/release

# ---- 1. make release -------------------------------------------------------------
t0=$(date +%s)
if [ -n "${RELEASE:-}" ]; then
	R=$(cd "$RELEASE" && pwd)
	say "checking the release the caller built in $R"
else
	# make release builds offline from the module cache; the tests fill
	# it for this machine's OS only, so fetch every module of the build
	# list first (the darwin and windows builds need modules of their own).
	go mod download || die "go mod download failed: make release needs a filled module cache"
	make release OUT="$WORK" >"$WORK/release.log" 2>&1 || { tail -n 40 "$WORK/release.log" >&2; die "make release (GOPROXY=off) failed"; }
	grep -E '^(release|dist): ' "$WORK/release.log" >&2
fi
for f in RELEASE-NOTES.md SHA256SUMS "kbkit-core-$VERSION.tgz" "kbkit-$VERSION-image-linux-$(go env GOHOSTARCH).tar.gz"; do
	[ -s "$R/$f" ] || die "make release wrote no $f"
done
grep -q "^# kbkit $VERSION " "$R/RELEASE-NOTES.md" || die "RELEASE-NOTES.md is not the notes of $VERSION"
say "release: $(ls "$R" | wc -l) files ($(( $(date +%s) - t0 ))s)"

# ---- 2. the binaries -------------------------------------------------------------
DIST=$R bash scripts/ci-dist.sh || die "the release's binaries (scripts/ci-dist.sh)"
HOST=$(go env GOHOSTOS)-$(go env GOHOSTARCH)
[ "$HOST" = linux-amd64 ] || { say "not a linux/amd64 machine: the image and the action are not run"; exit 0; }

# ---- 3. the image ------------------------------------------------------------------
dockerd_ensure
IMAGE=kbkit:$VERSION
docker image rm -f "$IMAGE" >/dev/null 2>&1 || true
docker load -i "$R/kbkit-$VERSION-image-linux-amd64.tar.gz" >&2 || die "docker load of the release's image tarball"
[ "$(docker image inspect --format '{{index .Config.Labels "org.opencontainers.image.version"}}' "$IMAGE")" = "$VERSION" ] ||
	die "$IMAGE has no org.opencontainers.image.version label $VERSION"
dk() { docker run --rm --network host "$@"; }
[ "$(dk "$IMAGE" version --short)" = "$VERSION" ] || die "$IMAGE version --short is not $VERSION"
dk "$IMAGE" spec run >"$WORK/image-spec.tap" || { tail -n 20 "$WORK/image-spec.tap" >&2; die "docker run $IMAGE spec run failed"; }
summary=$(grep -E '^# [0-9]+ cases:' "$WORK/image-spec.tap")
grep -qE '^# ([1-9][0-9]*) cases: \1 passed, 0 failed' "$WORK/image-spec.tap" || die "spec run in the image: $summary"
say "docker run $IMAGE spec run: $summary"

serve_start "$R/kbkit-linux-amd64" "$WORK"
URL=$(serve_field url)
mkdir -p "$WORK/image-out"
chmod 777 "$WORK/image-out"
rc=0
KBKIT_TOKEN=$(serve_field token) dk -e KBKIT_TOKEN -v "$WORK/image-out:/out" "$IMAGE" conformance protocol --server "$URL" \
	--run '^protocol/(healthz|whoami|create-page|command-seq|retry-committed|rejection|page-snapshot|no-token|bad-token|ws-)' \
	--junit /out/protocol.xml >"$WORK/image-protocol.tap" 2>"$WORK/image-protocol.err" || rc=$?
serve_stop
summary=$(grep -E '^# [0-9]+ checks:' "$WORK/image-protocol.tap" || true)
[ "$rc" = 0 ] || { grep '^not ok' "$WORK/image-protocol.tap" >&2; tail -n 5 "$WORK/image-protocol.err" >&2; die "conformance protocol in the image: exit $rc ($summary)"; }
! grep -q '^not ok' "$WORK/image-protocol.tap" && grep -qE '^# [0-9]+ checks: [1-9][0-9]+ passed, 0 failed' "$WORK/image-protocol.tap" ||
	die "conformance protocol in the image: $summary"
[ -s "$WORK/image-out/protocol.xml" ] || die "the image wrote no JUnit into the mounted directory"
say "docker run --network host $IMAGE conformance protocol --server $URL: $summary"

# ---- 4. the action ------------------------------------------------------------------
RELEASE=$R bash scripts/ci-action.sh || die "the action's script against the release (scripts/ci-action.sh)"

# ---- 5. go install of the tag ----------------------------------------------------------
# This checkout served as the tag v$VERSION by a module proxy directory
# (scripts/modproxy), the dependencies from the module cache's own
# download directory, a private GOMODCACHE: `go install ...@v$VERSION`
# resolves, downloads and builds it as it would from proxy.golang.org, and
# the binary's module version is the tag. -trimpath and CGO_ENABLED=0 reuse
# the dependencies compiled for dist.
t0=$(date +%s)
git ls-files -z | go run ./scripts/modproxy -module github.com/subspace/kbkit -version "v$VERSION" -out "$WORK/proxy" ||
	die "scripts/modproxy could not write the module proxy"
(cd "$WORK" && env GOMODCACHE="$WORK/modcache" GOPROXY="file://$WORK/proxy,file://$(go env GOMODCACHE)/cache/download" \
	GOSUMDB=off GOFLAGS= CGO_ENABLED=0 GOBIN="$WORK/gobin" \
	go install -trimpath "github.com/subspace/kbkit/cmd/kbkit@v$VERSION") >"$WORK/goinstall.log" 2>&1 ||
	{ tail -n 20 "$WORK/goinstall.log" >&2; die "go install github.com/subspace/kbkit/cmd/kbkit@v$VERSION through a local proxy"; }
"$WORK/gobin/kbkit" version --json | grep -q "\"version\":\"v$VERSION\"" ||
	{ "$WORK/gobin/kbkit" version >&2; die "a go install of the tag v$VERSION does not print that module version"; }
say "go install github.com/subspace/kbkit/cmd/kbkit@v$VERSION (a local proxy): $("$WORK/gobin/kbkit" version | head -n 1) ($(( $(date +%s) - t0 ))s)"
say "passed in $(( $(date +%s) - START ))s"
