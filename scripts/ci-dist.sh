#!/usr/bin/env bash
# ci-dist.sh — `make dist` offline, and what a downloaded binary can do
# without Go and without PostgreSQL:
#
#  1. make dist with GOPROXY=off (the module cache only): six binaries
#     (linux, darwin, windows x amd64, arm64) and SHA256SUMS, which
#     sha256sum -c accepts; go version -m says each one's GOOS/GOARCH;
#  2. on a linux/amd64 machine, that binary's `kbkit version`; then, with
#     KBKIT_PG=dsn and no DSN (any use of PostgreSQL fails) and an empty
#     working directory, the commands a team without Go or Postgres runs:
#     spec run, spec run --impl through the adapter protocol (the Node
#     example, exported by spec export), spec matrix, adapter; and kbkit
#     serve must fail there (it needs PostgreSQL), so the check has teeth.
#
# TARGETS="linux/amd64 ..." builds and checks fewer (as scripts/dist.sh).
# DIST=DIR checks the binaries and SHA256SUMS already in DIR instead of
# building them (scripts/ci-release.sh: make release's directory).
# Needs Go with a filled module cache (after make test), Node.js.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

. scripts/lib/ci.sh
ci_begin ci-dist

if [ -n "${DIST:-}" ]; then
	D=$DIST
	say "checking the binaries the caller built in $D"
else
	GOPROXY=off make dist OUT="$WORK" >"$WORK/dist.log" 2>&1 || { cat "$WORK/dist.log" >&2; die "make dist (GOPROXY=off) failed"; }
	grep '^dist: ' "$WORK/dist.log" >&2
	D=$WORK/dist
fi
(cd "$D" && sha256sum -c --quiet SHA256SUMS) || die "SHA256SUMS does not match the binaries"
n=0
for t in ${TARGETS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64}; do
	os=${t%/*} arch=${t#*/} ext=""
	[ "$os" = windows ] && ext=.exe
	b=$D/kbkit-$os-$arch$ext
	[ -s "$b" ] || die "no $b"
	info=$(go version -m "$b")
	grep -q "GOOS=$os\$" <<<"$info" && grep -q "GOARCH=$arch\$" <<<"$info" && grep -q "CGO_ENABLED=0\$" <<<"$info" ||
		die "$b is not a static $os/$arch build"
	n=$((n + 1))
done
say "$n binaries, SHA256SUMS checked ($(( $(date +%s) - START ))s)"

[ "$(go env GOHOSTOS)/$(go env GOHOSTARCH)" = linux/amd64 ] || { say "not a linux/amd64 machine: the binary is not run"; exit 0; }
K=$D/kbkit-linux-amd64
"$K" version >&2 || die "kbkit version of the linux/amd64 binary failed"
"$K" version | grep -q '^kbkit ' || die "kbkit version printed no version line"

# No Go, no Postgres: a forced DSN provider with no DSN fails any use of it.
E=$WORK/empty
mkdir -p "$E"
nopg() { (cd "$E" && env -u KBKIT_PG_DSN KBKIT_PG=dsn PATH=/usr/bin:/bin "$@"); }
nopg "$K" spec run >"$WORK/spec.tap" || die "spec run without Postgres"
tail -n 1 "$WORK/spec.tap" >&2
nopg "$K" spec export spec >&2 || die "spec export"
nopg "$K" spec run --impl "node spec/adapters/node/adapter.mjs" --expect spec/adapters/node/expectations.yaml spec >/dev/null ||
	die "spec run --impl through the exported Node adapter"
nopg "$K" spec matrix --reference --impl "node=node spec/adapters/node/adapter.mjs" \
	--expect node=spec/adapters/node/expectations.yaml --html matrix.html >&2 || die "spec matrix"
echo '{"type":"init","msg_id":1,"protocol":1}' | nopg "$K" adapter | grep -q '"init_ok"' || die "kbkit adapter"
rc=0
nopg timeout 60 "$K" serve --addr 127.0.0.1:0 >"$WORK/serve.out" 2>&1 || rc=$?
[ "$rc" != 0 ] && [ "$rc" != 124 ] || die "kbkit serve ran without PostgreSQL (exit $rc): the check above proves nothing"
say "without Postgres: spec run, export, --impl, matrix and adapter ran; serve refused ($(tail -n 1 "$WORK/serve.out"))"
say "passed in $(( $(date +%s) - START ))s"
