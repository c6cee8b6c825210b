#!/usr/bin/env bash
# action.sh — the steps of the kbkit GitHub Action (action.yml), runnable
# anywhere with bash and curl: get the pinned kbkit release, verify it
# against the release's SHA256SUMS, run the suites asked for, and write
# JUnit, the results matrix page and SVG badges.
#
# Inputs (environment; action.yml maps its inputs onto these):
#   KBKIT_VERSION   the release, X.Y.Z or vX.Y.Z (default: version.Kit of
#                   the checkout this script is in: the action's own tag)
#   KBKIT_BASE_URL  where releases are: <base>/vX.Y.Z/<file> (default
#                   https://github.com/subspace/kbkit/releases/download)
#   KBKIT_SUITES    space- or comma-separated: spec fuzz protocol client
#   KBKIT_IMPL      spec, fuzz: the adapter command line (spec/ADAPTER.md)
#   KBKIT_SERVER    protocol: the server's URL; KBKIT_TOKEN its device token
#   KBKIT_CLIENT    client: the client adapter's command line (spec/ADAPTER.md 7)
#   KBKIT_SEEDS     client: seeds, with faults (default 10)
#   KBKIT_FUZZ_COUNT, KBKIT_FUZZ_SEED   fuzz: inputs (default 2000), seed (default 1)
#   KBKIT_SPEC_EXPECT, KBKIT_FUZZ_EXPECT, KBKIT_PROTOCOL_EXPECT, KBKIT_CLIENT_EXPECT
#                   the expectations file (spec/EXPECTATIONS.md) of each suite
#   KBKIT_PROTOCOL_ARGS, KBKIT_CLIENT_ARGS
#                   more flags of conformance protocol and conformance run,
#                   split on white space (e.g. --run REGEX, --strict)
#   KBKIT_NAME      the implementation's name in the matrix and badges (default impl)
#   KBKIT_RESULTS   the output directory (default kbkit-results)
#
# Writes into KBKIT_RESULTS: SUITE.xml (JUnit) and SUITE.txt (the report)
# per suite, matrix.html and matrix.json (with spec), badges/SUITE.svg per
# suite (badges/NAME.json: the matrix's shields.io endpoint), summary.md;
# and, under GitHub Actions, the outputs results, junit, matrix, badges and
# exit-code, the binary's directory on GITHUB_PATH and summary.md in the
# job summary. The binary is cached in RUNNER_TOOL_CACHE (else TMPDIR).
#
# Exit status, as the commands define it: 0 every suite passed (known
# failures as its expectations file says), 1 a suite failed, 2 a suite
# could not run, or the download, the checksum or the inputs were wrong.
set -euo pipefail

HERE=$(cd "$(dirname "$0")/.." && pwd)
fatal() { echo "kbkit-action: $*" >&2; exit 2; }
say() { echo "kbkit-action: $*" >&2; }

# ---- inputs ------------------------------------------------------------------
VERSION=${KBKIT_VERSION:-}
if [ -z "$VERSION" ]; then
	VERSION=$(sed -nE 's/^[[:space:]]*(const[[:space:]]+)?Kit[[:space:]]*=[[:space:]]*"([^"]+)".*/\2/p' "$HERE/internal/version/version.go" 2>/dev/null | head -n 1)
	[ -n "$VERSION" ] || fatal "no version input and no internal/version/version.go beside this script"
fi
VERSION=${VERSION#v}
[[ $VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || fatal "version \"$VERSION\" is not X.Y.Z"
BASE=${KBKIT_BASE_URL:-https://github.com/subspace/kbkit/releases/download}
BASE=${BASE%/}
RESULTS=${KBKIT_RESULTS:-kbkit-results}
NAME=${KBKIT_NAME:-impl}
[[ $NAME =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || fatal "name \"$NAME\" must be letters, digits, . _ - (it names files)"
SUITES=$(tr ',' ' ' <<<"${KBKIT_SUITES:-}")
[ -n "${SUITES// /}" ] || fatal "no suites: set suites to some of: spec fuzz protocol client"
for s in $SUITES; do
	case $s in
	spec | fuzz) [ -n "${KBKIT_IMPL:-}" ] || fatal "suite $s needs impl (the adapter's command line)" ;;
	protocol)
		[ -n "${KBKIT_SERVER:-}" ] || fatal "suite protocol needs server (the server's URL)"
		[ -n "${KBKIT_TOKEN:-}" ] || fatal "suite protocol needs token (a device token of the server)"
		;;
	client) [ -n "${KBKIT_CLIENT:-}" ] || fatal "suite client needs client (the client adapter's command line)" ;;
	*) fatal "unknown suite \"$s\" (spec, fuzz, protocol, client)" ;;
	esac
done
for f in "${KBKIT_SPEC_EXPECT:-}" "${KBKIT_FUZZ_EXPECT:-}" "${KBKIT_PROTOCOL_EXPECT:-}" "${KBKIT_CLIENT_EXPECT:-}"; do
	[ -z "$f" ] || [ -f "$f" ] || fatal "expectations file $f does not exist"
done

# ---- the binary --------------------------------------------------------------
case $(uname -s) in
Linux) os=linux ;;
Darwin) os=darwin ;;
MINGW* | MSYS* | CYGWIN* | Windows_NT) os=windows ;;
*) fatal "no kbkit release for $(uname -s)" ;;
esac
case $(uname -m) in
x86_64 | amd64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
*) fatal "no kbkit release for $(uname -m)" ;;
esac
ext=""
[ "$os" = windows ] && ext=.exe
FILE=kbkit-$os-$arch$ext
DIR=${RUNNER_TOOL_CACHE:-${TMPDIR:-/tmp}}/kbkit/$VERSION/$os-$arch
mkdir -p "$DIR"
sha256() { if command -v sha256sum >/dev/null; then sha256sum "$1"; else shasum -a 256 "$1"; fi | cut -d ' ' -f 1; }
get() { curl -fsSL --retry 3 --retry-delay 2 -o "$2" "$1" || fatal "could not download $1"; }

get "$BASE/v$VERSION/SHA256SUMS" "$DIR/SHA256SUMS.part"
want=$(awk -v f="$FILE" '$2 == f || $2 == "*" f { print $1 }' "$DIR/SHA256SUMS.part")
[ -n "$want" ] || fatal "$BASE/v$VERSION/SHA256SUMS lists no $FILE"
if [ ! -x "$DIR/$FILE" ] || [ "$(sha256 "$DIR/$FILE")" != "$want" ]; then
	get "$BASE/v$VERSION/$FILE" "$DIR/$FILE.part"
	got=$(sha256 "$DIR/$FILE.part")
	if [ "$got" != "$want" ]; then
		rm -f "$DIR/$FILE.part"
		fatal "checksum mismatch: $FILE from $BASE/v$VERSION has sha256 $got, SHA256SUMS says $want; refusing to run it"
	fi
	chmod +x "$DIR/$FILE.part"
	mv "$DIR/$FILE.part" "$DIR/$FILE"
fi
mv "$DIR/SHA256SUMS.part" "$DIR/SHA256SUMS"
K=$DIR/$FILE
got=$("$K" version --short) || fatal "$K does not run"
[ "$got" = "$VERSION" ] || fatal "$FILE of v$VERSION says it is version $got"
say "kbkit $VERSION ($FILE, sha256 $want)"
mkdir -p "$DIR/bin"
cp "$K" "$DIR/bin/kbkit$ext"
[ -z "${GITHUB_PATH:-}" ] || echo "$DIR/bin" >>"$GITHUB_PATH"

# ---- the suites ----------------------------------------------------------------
mkdir -p "$RESULTS/badges"
RESULTS=$(cd "$RESULTS" && pwd)
# Bash 3.2 (macOS) too: no mapfile, no associative arrays, and an empty
# array expanded as ${e[@]+${e[@]+"${e[@]}"}} under set -u.
expect() { e=(); [ -z "$1" ] || e=(--expect "$1"); }
worst=0
run_suite() {
	local s=$1 rc=0
	shift
	say "$s: kbkit $*"
	"$K" "$@" >"$RESULTS/$s.txt" 2>"$RESULTS/$s.log" || rc=$?
	tail -n 3 "$RESULTS/$s.txt" >&2 || true
	[ "$rc" = 0 ] || tail -n 20 "$RESULTS/$s.log" >&2 || true
	case $rc in 0 | 1 | 2) ;; *) rc=2 ;; esac
	printf -v "code_$s" %s "$rc"
	[ "$rc" -le "$worst" ] || worst=$rc
	say "$s: exit $rc"
}
for s in $SUITES; do
	case $s in
	spec)
		expect "${KBKIT_SPEC_EXPECT:-}"
		run_suite spec spec run --impl "$KBKIT_IMPL" ${e[@]+"${e[@]}"} --junit "$RESULTS/spec.xml" --json "$RESULTS/spec.json"
		;;
	fuzz)
		expect "${KBKIT_FUZZ_EXPECT:-}"
		run_suite fuzz spec fuzz --impl "$KBKIT_IMPL" ${e[@]+"${e[@]}"} --count "${KBKIT_FUZZ_COUNT:-2000}" --seed "${KBKIT_FUZZ_SEED:-1}" --junit "$RESULTS/fuzz.xml"
		;;
	protocol)
		expect "${KBKIT_PROTOCOL_EXPECT:-}"
		read -ra a <<<"${KBKIT_PROTOCOL_ARGS:-}"
		run_suite protocol conformance protocol --server "$KBKIT_SERVER" ${e[@]+"${e[@]}"} ${a[@]+"${a[@]}"} --junit "$RESULTS/protocol.xml"
		;;
	client)
		expect "${KBKIT_CLIENT_EXPECT:-}"
		read -ra a <<<"${KBKIT_CLIENT_ARGS:-}"
		run_suite client conformance run --client "$KBKIT_CLIENT" ${e[@]+"${e[@]}"} ${a[@]+"${a[@]}"} --seeds "${KBKIT_SEEDS:-10}" --faults \
			--junit "$RESULTS/client.xml" --html "$RESULTS/client-timelines"
		;;
	esac
done

# ---- the matrix page and the badges --------------------------------------------
MATRIX=
if [ -f "$RESULTS/spec.json" ]; then
	"$K" spec matrix --results "$NAME=$RESULTS/spec.json" --html "$RESULTS/matrix.html" --json "$RESULTS/matrix.json" \
		--badges "$RESULTS/badges" >"$RESULTS/matrix.txt" 2>&1 || true
	[ -s "$RESULTS/matrix.html" ] && MATRIX=$RESULTS/matrix.html || say "spec matrix wrote no page: $(tail -n 1 "$RESULTS/matrix.txt")"
fi

# attr FILE NAME: an attribute of the JUnit file's root element (0 if absent).
attr() {
	local v
	v=$(sed -n '/<testsuites\{0,1\}[ >]/{s/.*<testsuites\{0,1\} \([^>]*\)>.*/\1/p;q;}' "$1" | tr ' ' '\n' | sed -n "s/^$2=\"\([0-9]*\)\"\$/\1/p")
	echo "${v:-0}"
}
# badge FILE LABEL MESSAGE COLOR: a flat SVG badge, 7 px a character of
# 11 px Verdana (about shields.io's widths); textLength fits each text to
# its box in whatever font the viewer has.
badge() {
	local lw=$(( ${#2} * 7 + 10 )) mw=$(( ${#3} * 7 + 10 ))
	local w=$(( lw + mw )) id
	id=kbkit-$(basename "$1" .svg) # ids unique per badge, should a page inline several
	cat >"$1" <<SVG
<svg xmlns="http://www.w3.org/2000/svg" width="$w" height="20" role="img" aria-label="$2: $3"><title>$2: $3</title><linearGradient id="$id-s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient><clipPath id="$id-r"><rect width="$w" height="20" rx="3" fill="#fff"/></clipPath><g clip-path="url(#$id-r)"><rect width="$lw" height="20" fill="#555"/><rect x="$lw" width="$mw" height="20" fill="$4"/><rect width="$w" height="20" fill="url(#$id-s)"/></g><g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11"><text x="$(( lw / 2 ))" y="14" textLength="$(( lw - 10 ))" lengthAdjust="spacingAndGlyphs">$2</text><text x="$(( lw + mw / 2 ))" y="14" textLength="$(( mw - 10 ))" lengthAdjust="spacingAndGlyphs">$3</text></g></svg>
SVG
}
{
	echo "### kbkit $VERSION: $NAME"
	echo
	echo "| suite | exit | tests | failures | errors | skipped (expected) |"
	echo "|---|---:|---:|---:|---:|---:|"
} >"$RESULTS/summary.md"
JUNIT=""
for s in $SUITES; do
	x=$RESULTS/$s.xml
	eval "rc=\$code_$s"
	if [ -s "$x" ]; then
		JUNIT="${JUNIT:+$JUNIT }$x"
		t=$(attr "$x" tests) f=$(attr "$x" failures) e=$(attr "$x" errors) k=$(attr "$x" skipped)
	else
		t=0 f=0 e=0 k=0
	fi
	case $rc in
	0) msg="passing $(( t - f - e - k ))/$t" color="#4c1" ;;
	1) msg="failing $(( f + e ))/$t" color="#e05d44" ;;
	*) msg="error" color="#9f9f9f" ;;
	esac
	badge "$RESULTS/badges/$s.svg" "kbkit $s" "$msg" "$color"
	echo "| $s | $rc | $t | $f | $e | $k |" >>"$RESULTS/summary.md"
done
[ -z "$MATRIX" ] || printf '\nThe results matrix: %s\n' "$MATRIX" >>"$RESULTS/summary.md"
[ -z "${GITHUB_STEP_SUMMARY:-}" ] || cat "$RESULTS/summary.md" >>"$GITHUB_STEP_SUMMARY"
if [ -n "${GITHUB_OUTPUT:-}" ]; then
	{
		echo "results=$RESULTS"
		echo "junit=$JUNIT"
		echo "matrix=$MATRIX"
		echo "badges=$RESULTS/badges"
		echo "exit-code=$worst"
	} >>"$GITHUB_OUTPUT"
fi
cat "$RESULTS/summary.md" >&2
exit "$worst"
