#!/usr/bin/env bash
# release-notes.sh — the section of one version cut from a changelog in
# the format of CHANGELOG.md (headings "## [X.Y.Z] - YYYY-MM-DD", newest
# first, an optional "## [Unreleased]" on top), printed on stdout without
# its heading, with a first line "# kbkit X.Y.Z (YYYY-MM-DD)":
#
#   scripts/release-notes.sh CHANGELOG.md 0.1.0 >notes.md
#
# Fails (exit 1, nothing on stdout) when the file or the version's section
# is missing, when its heading has no date, or when the section is empty.
set -euo pipefail

[ $# = 2 ] || { echo "usage: $0 CHANGELOG.md X.Y.Z" >&2; exit 2; }
file=$1 version=$2
fail() { echo "release-notes: $*" >&2; exit 1; }
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || fail "version $version is not X.Y.Z"
[ -f "$file" ] || fail "$file does not exist: write its section \"## [$version] - YYYY-MM-DD\" first"

# awk prints "date<TAB>" on the first line, then the section's lines; the
# version's dots are matched literally.
cut=$(awk -v v="$version" '
	BEGIN { h = "## [" v "]" }
	/^## / {
		if (on) exit
		if (substr($0, 1, length(h)) == h) {
			rest = substr($0, length(h) + 1)
			if (rest != "" && rest !~ /^ /) next
			on = 1
			d = ""
			if (match(rest, /[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]/)) d = substr(rest, RSTART, RLENGTH)
			print "date\t" d
			next
		}
	}
	# Link reference definitions of versions (the changelog footer).
	on && /^\[[^]]+\]: / { next }
	on { print }
' "$file")
[ -n "$cut" ] || fail "$file has no section \"## [$version] - YYYY-MM-DD\": add what $version changes before cutting it"
date=$(head -n 1 <<<"$cut" | cut -f 2)
[ -n "$date" ] || fail "the heading of $version in $file has no date (\"## [$version] - YYYY-MM-DD\")"
body=$(tail -n +2 <<<"$cut" | sed -e '/./,$!d')
[ -n "$(tr -d '[:space:]' <<<"$body")" ] || fail "the section of $version in $file is empty"
printf '# kbkit %s (%s)\n\n%s\n' "$version" "$date" "$body"
