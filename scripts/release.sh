#!/usr/bin/env bash
# release.sh — `make release`: everything a release of kbkit publishes,
# built offline (GOPROXY=off: the module cache only) into $OUT/release:
#
#   kbkit-OS-ARCH[.exe]     the `make dist` binaries (scripts/dist.sh: linux,
#                           darwin, windows x amd64, arm64; static)
#   kbkit-X.Y.Z-image-linux-ARCH.tar.gz
#                           the container image kbkit:X.Y.Z (FROM scratch,
#                           scripts/image/Dockerfile), built by the local
#                           Docker engine and saved (`docker load -i` it)
#   kbkit-core-X.Y.Z.tgz    the @kbkit/core npm package (make wasm; npm pack)
#   RELEASE-NOTES.md        CHANGELOG.md's section of X.Y.Z
#                           (scripts/release-notes.sh) and how to get it
#   SHA256SUMS              of every file above (sha256sum -c SHA256SUMS)
#
# X.Y.Z is version.Kit (internal/version/version.go), the one place the
# version lives. The script fails, before building anything, when the
# changelog has no dated section for it or js/kbcore/package.json says
# another version; after building, when the binary's `kbkit version
# --short` or the image's is not X.Y.Z.
#
# Docker: the engine at DOCKER_HOST (else the default socket); without
# one, it starts dockerd --bridge=none --iptables=false on a private
# socket and data root and stops it at the end (scripts/lib/dockerd.sh;
# root only), so the image stays loadable from the saved tarball.
#
# Environment: OUT (default out), CHANGELOG (default CHANGELOG.md),
# COMMIT (default git rev-parse HEAD), TARGETS (as scripts/dist.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
export GOPROXY=off

. scripts/lib/ci.sh
ci_begin release
. scripts/lib/dockerd.sh
. scripts/lib/image.sh
ci_on_exit() { dockerd_stop; }

OUT=${OUT:-out}
case $OUT in /*) ;; *) OUT=$PWD/$OUT ;; esac # nothing is written before the checks
REL=$OUT/release
CHANGELOG=${CHANGELOG:-CHANGELOG.md}
COMMIT=${COMMIT:-$(git rev-parse HEAD 2>/dev/null || true)}

# ---- what is being released -----------------------------------------------
VERSION=$(sed -nE 's/^[[:space:]]*(const[[:space:]]+)?Kit[[:space:]]*=[[:space:]]*"([^"]+)".*/\2/p' internal/version/version.go | head -n 1)
[[ $VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
	die "internal/version/version.go: no version.Kit of the form X.Y.Z (read \"$VERSION\")"
say "kbkit $VERSION (commit ${COMMIT:-unknown})"
scripts/release-notes.sh "$CHANGELOG" "$VERSION" >"$WORK/notes.md" || die "no release notes for $VERSION in $CHANGELOG (see above)"
npmv=$(sed -nE 's/^  "version": "([^"]+)".*/\1/p' js/kbcore/package.json)
[ "$npmv" = "$VERSION" ] || die "js/kbcore/package.json has version $npmv, not $VERSION: bump it with version.Kit"
command -v npm >/dev/null || die "npm is needed to pack @kbkit/core"
command -v docker >/dev/null || command -v dockerd >/dev/null || [ "$(id -u)" = 0 ] ||
	die "docker is needed to build the image (apt-get install docker.io)"

# ---- the binaries ------------------------------------------------------------
mkdir -p "$OUT"
OUT=$OUT DIST=$REL COMMIT=$COMMIT scripts/dist.sh || die "scripts/dist.sh (GOPROXY=off) failed"
HOST=$(go env GOHOSTOS)-$(go env GOHOSTARCH)
if [ -x "$REL/kbkit-$HOST" ]; then
	got=$("$REL/kbkit-$HOST" version --short) || die "kbkit-$HOST version --short failed"
	[ "$got" = "$VERSION" ] || die "kbkit-$HOST says version $got, not $VERSION"
	say "kbkit-$HOST version --short: $got"
fi

# ---- @kbkit/core -------------------------------------------------------------
make -s wasm >&2 || die "make wasm failed"
(cd js/kbcore && npm pack --silent --pack-destination "$REL" >"$WORK/pack.txt" 2>"$WORK/pack.log") ||
	{ cat "$WORK/pack.log" >&2; die "npm pack js/kbcore failed"; }
TGZ=$(tail -n 1 "$WORK/pack.txt")
[ "$TGZ" = "kbkit-core-$VERSION.tgz" ] && [ -s "$REL/$TGZ" ] || die "npm pack wrote \"$TGZ\", not kbkit-core-$VERSION.tgz"
say "$TGZ ($(wc -c <"$REL/$TGZ") bytes)"

# ---- the image ---------------------------------------------------------------
ARCH=$(go env GOHOSTARCH)
[ -x "$REL/kbkit-linux-$ARCH" ] || die "no $REL/kbkit-linux-$ARCH for the image (TARGETS must include linux/$ARCH)"
CTX=$WORK/image
image_context "$CTX"
cp "$REL/kbkit-linux-$ARCH" "$CTX/kbkit"
cp scripts/image/Dockerfile "$CTX/Dockerfile"
dockerd_ensure
IMAGE=kbkit:$VERSION
t0=$(date +%s)
image_build "$CTX" "$IMAGE" --build-arg VERSION="$VERSION" --build-arg COMMIT="$COMMIT"
got=$(docker run --rm --network host "$IMAGE" version --short) || die "docker run $IMAGE version --short failed"
[ "$got" = "$VERSION" ] || die "the image $IMAGE says version $got, not $VERSION"
for d in . /tmp; do # the working directory and /tmp are writable by the image's user
	docker run --rm --network host "$IMAGE" spec export "$d/spec" >/dev/null 2>"$WORK/export.log" ||
		{ cat "$WORK/export.log" >&2; die "$IMAGE cannot write into $d as its user"; }
done
IMG=kbkit-$VERSION-image-linux-$ARCH.tar.gz
docker save "$IMAGE" | gzip -9 >"$REL/$IMG" || die "docker save $IMAGE failed"
say "image $IMAGE ($(docker image inspect --format '{{.Size}}' "$IMAGE") bytes; saved as $IMG, $(wc -c <"$REL/$IMG") bytes) in $(( $(date +%s) - t0 ))s"

# ---- notes and checksums -----------------------------------------------------
{
	cat "$WORK/notes.md"
	cat <<MD

## Get it

- Go: \`go install github.com/subspace/kbkit/cmd/kbkit@v$VERSION\`
- A binary: \`kbkit-OS-ARCH\` of this release, checked with \`sha256sum -c --ignore-missing SHA256SUMS\`
- The image: \`docker load -i $IMG\`, then \`docker run --rm --network host $IMAGE spec run\`
- GitHub Actions: \`uses: subspace/kbkit@v$VERSION\` (docs/ci.md)
- @kbkit/core: \`npm install ./$TGZ\`
MD
} >"$REL/RELEASE-NOTES.md"
(cd "$REL" && rm -f SHA256SUMS && sha256sum -- * >"$WORK/SHA256SUMS" && mv "$WORK/SHA256SUMS" SHA256SUMS)
(cd "$REL" && sha256sum -c --quiet SHA256SUMS) || die "SHA256SUMS does not check"
say "$REL: $(ls "$REL" | wc -l) files ($(ls "$REL" | paste -sd ' '))"
say "done in $(( $(date +%s) - START ))s"
