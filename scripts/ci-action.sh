#!/usr/bin/env bash
# ci-action.sh — the GitHub Action's script (scripts/action.sh, the steps
# action.yml runs) end to end on this machine, as a runner would run it:
# the release directory served over loopback HTTP as <base>/vX.Y.Z/, a
# fresh tool cache, GITHUB_OUTPUT, GITHUB_PATH and GITHUB_STEP_SUMMARY as
# files:
#
#  1. the Node adapter (speckit/adapters/node) under spec and fuzz with its
#     expectations: exit 0; spec.xml, fuzz.xml, matrix.html, the badges
#     (SVG, well-formed XML; the matrix's NAME.json) and the outputs exist;
#  2. the example client (examples/client-js, after npm ci) under client
#     with its expectations (client-expect) and a kbkit serve on loopback
#     under protocol (six checks, chosen with protocol-args) with
#     protocol-expect skipping one: exit 0, the same files, the check
#     skipped as expected;
#  2b. protocol-expect expecting a passing check to fail: exit 1, the
#     entry reported stale (the ratchet reaches the action's run);
#  3. the broken adapter (speckit/adapters/broken): exit 1, a red badge;
#  4. a release whose binary does not match SHA256SUMS: exit 2, "checksum
#     mismatch", and nothing left to run in the tool cache;
#  5. an unknown suite: exit 2 before any download.
#
# RELEASE=DIR: a `make release` directory (ci-release.sh passes its own);
# default: the host's binary and SHA256SUMS built here by scripts/dist.sh.
# SEEDS (default 3) seeds of the client suite. Needs Go, Node.js 20+, npm,
# curl and PostgreSQL's server binaries.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
ROOT=$PWD

. scripts/lib/ci.sh
. scripts/lib/serve.sh
ci_begin ci-action
HTTP_PID=
ci_on_exit() {
	if [ -n "$HTTP_PID" ]; then kill "$HTTP_PID" 2>/dev/null || true; wait "$HTTP_PID" 2>/dev/null || true; fi
}
for t in go node npm curl; do command -v "$t" >/dev/null || die "$t is required"; done

VERSION=$(sed -nE 's/^[[:space:]]*(const[[:space:]]+)?Kit[[:space:]]*=[[:space:]]*"([^"]+)".*/\2/p' internal/version/version.go | head -n 1)
HOST=$(go env GOHOSTOS)-$(go env GOHOSTARCH)
if [ -z "${RELEASE:-}" ]; then
	RELEASE=$WORK/release
	GOPROXY=off DIST=$RELEASE TARGETS=$(go env GOHOSTOS)/$(go env GOHOSTARCH) scripts/dist.sh || die "scripts/dist.sh failed"
fi
RELEASE=$(cd "$RELEASE" && pwd)
[ -x "$RELEASE/kbkit-$HOST" ] && [ -s "$RELEASE/SHA256SUMS" ] || die "$RELEASE has no kbkit-$HOST or no SHA256SUMS"

# The release served as <base>/v$VERSION/ (as GitHub serves
# releases/download/vX.Y.Z/FILE), and a tampered copy as <base>/bad/v$VERSION/.
mkdir -p "$WORK/www/bad/v$VERSION"
ln -s "$RELEASE" "$WORK/www/v$VERSION"
cp "$RELEASE/SHA256SUMS" "$WORK/www/bad/v$VERSION/"
cp "$RELEASE/kbkit-$HOST" "$WORK/www/bad/v$VERSION/"
printf 'x' >>"$WORK/www/bad/v$VERSION/kbkit-$HOST"
node js/kbcore/example/serve.mjs "$WORK/www" >"$WORK/url.txt" 2>"$WORK/http.log" &
HTTP_PID=$!
for _ in $(seq 100); do [ -s "$WORK/url.txt" ] && break; sleep 0.1; done
BASE=$(head -n 1 "$WORK/url.txt")
BASE=${BASE%/}
[ -n "$BASE" ] || { cat "$WORK/http.log" >&2; die "the loopback HTTP server did not start"; }
curl -fsS "$BASE/v$VERSION/SHA256SUMS" >/dev/null || die "$BASE/v$VERSION/SHA256SUMS is not served"
say "release $VERSION served at $BASE/v$VERSION/"

# action NAME [VAR=VALUE...]: scripts/action.sh as a runner runs it, in
# $WORK/NAME (its GITHUB_* files there); its exit status in RC.
action() {
	local name=$1
	shift
	local d=$WORK/$name
	mkdir -p "$d/cache"
	: >"$d/output" && : >"$d/path" && : >"$d/summary"
	RC=0
	env RUNNER_TOOL_CACHE="$d/cache" GITHUB_OUTPUT="$d/output" GITHUB_PATH="$d/path" GITHUB_STEP_SUMMARY="$d/summary" \
		KBKIT_VERSION="$VERSION" KBKIT_BASE_URL="$BASE" KBKIT_RESULTS="$d/results" "$@" \
		bash "$ROOT/scripts/action.sh" >"$d/stdout" 2>"$d/stderr" || RC=$?
	say "$name: exit $RC; $(grep -E '^\| [a-z]+ \|' "$d/stderr" | tr -s ' ' | paste -sd ';' || true)"
}
need() { for f in "$@"; do [ -s "$f" ] || die "${f#$WORK/}: missing or empty"; done; }
output() { sed -n "s/^$2=//p" "$WORK/$1/output"; }

cat >"$WORK/svgcheck.go" <<'GO'
// svgcheck: every argument is well-formed XML with an <svg> root.
package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
)

func main() {
	for _, p := range os.Args[1:] {
		f, err := os.Open(p)
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		d := xml.NewDecoder(f)
		root := ""
		for {
			t, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				fmt.Printf("%s: %v\n", p, err)
				os.Exit(1)
			}
			if s, ok := t.(xml.StartElement); ok && root == "" {
				root = s.Name.Local
			}
		}
		if root != "svg" {
			fmt.Printf("%s: root <%s>, not <svg>\n", p, root)
			os.Exit(1)
		}
	}
}
GO
go build -o "$WORK/svgcheck" "$WORK/svgcheck.go" || die "go build svgcheck"

# ---- 1. the Node adapter: spec and fuzz ---------------------------------------
NODE_EXPECT=$ROOT/speckit/adapters/node/expectations.yaml
action node KBKIT_SUITES="spec fuzz" KBKIT_IMPL="node speckit/adapters/node/adapter.mjs" KBKIT_NAME=node \
	KBKIT_SPEC_EXPECT="$NODE_EXPECT" KBKIT_FUZZ_EXPECT="$NODE_EXPECT" KBKIT_FUZZ_COUNT=1000
[ "$RC" = 0 ] || { tail -n 40 "$WORK/node/stderr" >&2; die "the Node adapter: exit $RC, want 0"; }
R=$WORK/node/results
need "$R/spec.xml" "$R/fuzz.xml" "$R/matrix.html" "$R/badges/spec.svg" "$R/badges/fuzz.svg" "$R/badges/node.json" "$R/summary.md" "$WORK/node/summary"
"$WORK/svgcheck" "$R/badges/spec.svg" "$R/badges/fuzz.svg" || die "a badge is not well-formed SVG"
grep -q 'passing' "$R/badges/spec.svg" || die "spec.svg does not say passing"
[ "$(output node exit-code)" = 0 ] && [ "$(output node matrix)" = "$R/matrix.html" ] &&
	[ "$(output node junit)" = "$R/spec.xml $R/fuzz.xml" ] || { cat "$WORK/node/output" >&2; die "the outputs"; }
[ -x "$(cat "$WORK/node/path")/kbkit" ] || die "GITHUB_PATH names no directory with kbkit"
[ "$("$(cat "$WORK/node/path")/kbkit" version --short)" = "$VERSION" ] || die "the kbkit on GITHUB_PATH is not $VERSION"

# ---- 2. the example client and a server: client and protocol ------------------
(cd examples/client-js && npm ci --no-audit --no-fund --loglevel=error) >&2 || die "npm ci in examples/client-js"
cat >"$WORK/protocol-skip.yaml" <<'YAML'
spec_version: 2
expectations:
  - {id: protocol/whoami, status: skip, reason: "ci-action: protocol-expect reaches conformance protocol"}
YAML
cat >"$WORK/protocol-stale.yaml" <<'YAML'
spec_version: 2
expectations:
  - {id: protocol/healthz, status: fail, reason: "ci-action: a passing check expected to fail is stale"}
YAML
PROTOCOL_ARGS="--run ^protocol/(healthz|whoami|create-page|command-seq|rejection|ws-ping)$ --event-timeout 20s"
serve_start "$RELEASE/kbkit-$HOST" "$WORK"
action client KBKIT_SUITES="protocol,client" KBKIT_NAME=example-client KBKIT_SERVER="$(serve_field url)" \
	KBKIT_TOKEN="$(serve_field token)" KBKIT_CLIENT="node examples/client-js/adapter.mjs" KBKIT_SEEDS="${SEEDS:-3}" KBKIT_PG=local \
	KBKIT_PROTOCOL_ARGS="$PROTOCOL_ARGS" KBKIT_PROTOCOL_EXPECT="$WORK/protocol-skip.yaml" \
	KBKIT_CLIENT_EXPECT="$ROOT/examples/client-js/expectations.yaml"
[ "$RC" = 0 ] || { tail -n 40 "$WORK/client/stderr" >&2; die "the example client and kbkit serve: exit $RC, want 0"; }
action stale KBKIT_SUITES=protocol KBKIT_SERVER="$(serve_field url)" KBKIT_TOKEN="$(serve_field token)" \
	KBKIT_PROTOCOL_ARGS="$PROTOCOL_ARGS" KBKIT_PROTOCOL_EXPECT="$WORK/protocol-stale.yaml"
serve_stop
[ "$RC" = 1 ] || { tail -n 20 "$WORK/stale/stderr" >&2; die "a stale protocol expectation: exit $RC, want 1"; }
grep -q '1 stale expectation' "$WORK/stale/results/protocol.txt" ||
	{ tail -n 5 "$WORK/stale/results/protocol.txt" >&2; die "protocol.txt does not report the stale expectation"; }
R=$WORK/client/results
need "$R/protocol.xml" "$R/client.xml" "$R/badges/protocol.svg" "$R/badges/client.svg"
grep -q '<testsuites[^>]* tests="6"' "$R/protocol.xml" || die "protocol-args did not reach conformance protocol (--run: 6 checks)"
grep -q '^ok [0-9]* - protocol/whoami # SKIP expected skip' "$R/protocol.txt" ||
	{ grep whoami "$R/protocol.txt" >&2; die "protocol-expect did not reach conformance protocol (protocol/whoami not skipped as expected)"; }
"$WORK/svgcheck" "$R/badges/protocol.svg" "$R/badges/client.svg" || die "a badge is not well-formed SVG"
[ -z "$(output client matrix)" ] || die "a matrix without the spec suite"

# ---- 3. a broken adapter fails -------------------------------------------------
action broken KBKIT_SUITES=spec KBKIT_IMPL="node speckit/adapters/broken/adapter.mjs" KBKIT_NAME=broken
[ "$RC" = 1 ] || { tail -n 20 "$WORK/broken/stderr" >&2; die "the broken adapter: exit $RC, want 1"; }
grep -q 'failing' "$WORK/broken/results/badges/spec.svg" || die "the broken adapter's badge does not say failing"
[ "$(output broken exit-code)" = 1 ] || die "the broken adapter's exit-code output"

# ---- 4. a checksum mismatch is refused -------------------------------------------
action mismatch KBKIT_SUITES=spec KBKIT_IMPL="node speckit/adapters/node/adapter.mjs" KBKIT_BASE_URL="$BASE/bad"
[ "$RC" = 2 ] || die "a tampered binary: exit $RC, want 2"
grep -q 'checksum mismatch' "$WORK/mismatch/stderr" || { cat "$WORK/mismatch/stderr" >&2; die "no \"checksum mismatch\" message"; }
[ -z "$(find "$WORK/mismatch/cache" -type f -name 'kbkit-*' ! -name SHA256SUMS.part)" ] || die "the tampered binary was left in the tool cache"
[ ! -e "$WORK/mismatch/results" ] || die "the tampered binary ran"

# ---- 5. bad inputs -----------------------------------------------------------------
action badsuite KBKIT_SUITES="spec lint" KBKIT_IMPL=true
[ "$RC" = 2 ] && grep -q 'unknown suite "lint"' "$WORK/badsuite/stderr" || die "an unknown suite: exit $RC, want 2"
[ -z "$(ls -A "$WORK/badsuite/cache")" ] || die "an unknown suite still downloaded"

say "passed in $(( $(date +%s) - START ))s"
