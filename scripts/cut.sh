#!/usr/bin/env bash
# cut.sh — `make cut VERSION=...`: move kbkit's version in one command.
#
#   scripts/cut.sh X.Y.Z       cut the release X.Y.Z
#   scripts/cut.sh X.Y.Z-dev   open the work after a release (CHANGELOG.md,
#                              "Versioning": between releases version.Kit
#                              is the next version with -dev)
#
# Cutting X.Y.Z: refuses a version that is not X.Y.Z or not above both the
# newest dated section of CHANGELOG.md and version.Kit, and a changelog
# whose [Unreleased] is missing or says nothing. Then it sets version.Kit
# (internal/version/version.go) and js/kbcore/package.json's version to
# X.Y.Z, the pinned examples of README.md and docs/ci.md (what
# internal/release's TestPinsAreVersionKit holds equal) to X.Y.Z, turns
# "## [Unreleased]" into "## [X.Y.Z] - <today, UTC>", rewrites the id
# snapshot spec/ids.txt (go generate ./internal/changelog), runs the
# changelog and pin tests, and prints the git commands that commit and tag
# the cut and then open X.Y.(Z+1)-dev. It neither commits, tags nor
# pushes.
#
# Opening X.Y.Z-dev: refuses one not above the newest dated section; sets
# version.Kit and js/kbcore/package.json to it and puts an empty
# [Unreleased] on top of the changelog when it has none. The pins keep
# naming the newest release.
#
# Every check is made before anything is written; when the tests fail
# after the writes, the files it wrote are put back as they were.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
GO=${GO:-go}

die() { echo "cut: $*" >&2; exit 1; }
[ $# = 1 ] || { echo "usage: $0 X.Y.Z | X.Y.Z-dev (make cut VERSION=X.Y.Z)" >&2; exit 2; }
NEW=$1
[[ $NEW =~ ^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-dev)?$ ]] ||
	die "version \"$NEW\" is neither X.Y.Z nor X.Y.Z-dev (no v, no other suffix)"
BASE=${NEW%-dev}
DEV=false
[ "$BASE" = "$NEW" ] || DEV=true

VERSION_GO=internal/version/version.go
PKG=js/kbcore/package.json
CL=CHANGELOG.md
PINNED=(README.md docs/ci.md)
for f in "$VERSION_GO" "$PKG" "$CL" "${PINNED[@]}"; do [ -f "$f" ] || die "$f does not exist"; done

KIT=$(sed -nE 's/^const Kit = "([^"]+)"$/\1/p' "$VERSION_GO")
[ -n "$KIT" ] || die "$VERSION_GO has no line const Kit = \"...\""
LAST=$(sed -nE 's/^## \[([0-9]+\.[0-9]+\.[0-9]+)\] - [0-9]{4}-[0-9]{2}-[0-9]{2}$/\1/p' "$CL" | head -n 1)
[ -n "$LAST" ] || die "$CL has no dated section ## [X.Y.Z] - YYYY-MM-DD"

# above A B: A is a higher X.Y.Z than B.
above() {
	local IFS=.
	local -a a=($1) b=($2)
	local i
	for i in 0 1 2; do
		((a[i] > b[i])) && return 0
		((a[i] < b[i])) && return 1
	done
	return 1
}
above "$BASE" "$LAST" || die "$NEW is not above $LAST, the newest release in $CL"
[ "$KIT" != "$NEW" ] || die "version.Kit is $NEW already"
if ! $DEV; then
	above "$BASE" "${KIT%-dev}" || [ "$BASE" = "${KIT%-dev}" -a "$KIT" != "$BASE" ] ||
		die "$NEW is not above version.Kit $KIT"
	# [Unreleased]'s body: its lines up to the next "## " heading.
	body=$(awk '/^## /{ if (on) exit; if ($0 == "## [Unreleased]") { on = 1; print "<section>"; next } } on' "$CL")
	[ -n "$body" ] || die "$CL has no ## [Unreleased]: write what $NEW changes there first"
	grep -vE '^(<section>|[[:space:]]*|#.*|spec_version: .*)$' <<<"$body" >/dev/null ||
		die "$CL's ## [Unreleased] is empty: write what $NEW changes there first"
fi

# ---- the writes ---------------------------------------------------------------
SAVE=$(mktemp -d "${TMPDIR:-/tmp}/cut.XXXXXX")
FILES=("$VERSION_GO" "$PKG" "$CL" "${PINNED[@]}" spec/ids.txt)
for f in "${FILES[@]}"; do mkdir -p "$SAVE/$(dirname "$f")"; [ ! -f "$f" ] || cp -p "$f" "$SAVE/$f"; done
restore() {
	for f in "${FILES[@]}"; do [ ! -f "$SAVE/$f" ] || cp -p "$SAVE/$f" "$f"; done
	rm -rf "$SAVE"
}
trap 'rc=$?; if [ $rc != 0 ]; then restore; echo "cut: nothing changed (the files are as they were)" >&2; else rm -rf "$SAVE"; fi' EXIT

sed -i -E "s/^const Kit = \"[^\"]+\"$/const Kit = \"$NEW\"/" "$VERSION_GO"
sed -i -E "0,/^  \"version\": \"[^\"]+\",$/s//  \"version\": \"$NEW\",/" "$PKG"
if $DEV; then
	if ! grep -qx '## \[Unreleased\]' "$CL"; then
		spec=$(awk '/^## \[[0-9]/{ on = 1; next } on && /^spec_version: /{ print $2; exit }' "$CL")
		awk -v s="${spec:-1}" '!done && /^## \[[0-9]/{ print "## [Unreleased]\n\nspec_version: " s "\n"; done = 1 } 1' "$CL" >"$SAVE/cl.new"
		cat "$SAVE/cl.new" >"$CL"
	fi
	TESTS='^(TestChangelog|TestIDsNamedInChangelog|TestPinsAreVersionKit)'
else
	TODAY=$(date -u +%F)
	sed -i "s/^## \[Unreleased\]$/## [$NEW] - $TODAY/" "$CL"
	for f in "${PINNED[@]}"; do
		sed -i -E "s/(kbkit@v|kbkit:|kbkit-|\bv=)[0-9]+\.[0-9]+\.[0-9]+/\1$NEW/g" "$f"
	done
	"$GO" generate ./internal/changelog >&2 || die "go generate ./internal/changelog could not rewrite spec/ids.txt"
	TESTS='^(TestChangelog|TestIDsNamedInChangelog|TestPinsAreVersionKit|TestCIDoc)'
fi
"$GO" test -count=1 -run "$TESTS" ./internal/changelog ./internal/release >&2 ||
	die "the changelog and pin tests fail after the cut (above)"

echo "cut: version.Kit is $NEW ($(git diff --stat -- "${FILES[@]}" 2>/dev/null | tail -n 1))" >&2
if $DEV; then
	echo "git commit -am \"version: open $NEW\""
else
	NEXT=${BASE%.*}.$(( ${BASE##*.} + 1 ))-dev
	cat <<EOF
git commit -am "release: kbkit $NEW"
git tag -a v$NEW -m "kbkit $NEW"
make release
git push origin HEAD v$NEW
make cut VERSION=$NEXT && git commit -am "version: open $NEXT"
EOF
fi
