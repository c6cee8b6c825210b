#!/usr/bin/env bash
# dist.sh — `make dist`: kbkit for linux, darwin and windows on amd64 and
# arm64, cross-compiled with CGO_ENABLED=0 (static: one file to download),
# into $OUT/dist with a SHA256SUMS file (sha256sum -c SHA256SUMS checks it).
#
#   OUT=out TARGETS="linux/amd64 darwin/arm64" scripts/dist.sh
#
# DIST=DIR writes them into DIR instead (make release: $OUT/release).
#
# Needs only Go and the module cache (GOPROXY=off works once `go mod
# download` or a build has filled it). Prints each binary and the time.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

OUT=${OUT:-out}
DIST=${DIST:-$OUT/dist}
TARGETS=${TARGETS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64}
COMMIT=${COMMIT:-$(git rev-parse HEAD 2>/dev/null || true)}

START=$(date +%s)
rm -rf "$DIST"
mkdir -p "$DIST"
for t in $TARGETS; do
	os=${t%/*} arch=${t#*/}
	ext=""
	[ "$os" = windows ] && ext=.exe
	bin=kbkit-$os-$arch$ext
	t0=$(date +%s)
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -buildvcs=false \
		-ldflags "-s -w -X main.commit=$COMMIT" -o "$DIST/$bin" ./cmd/kbkit
	echo "dist: $DIST/$bin ($(( $(wc -c <"$DIST/$bin") / 1048576 )) MiB, $(( $(date +%s) - t0 ))s)" >&2
done
(cd "$DIST" && sha256sum kbkit-* >SHA256SUMS)
echo "dist: $DIST/SHA256SUMS; $(echo $TARGETS | wc -w) binaries in $(( $(date +%s) - START ))s" >&2
