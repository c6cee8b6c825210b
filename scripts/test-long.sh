#!/usr/bin/env bash
# `make test-long`: the tests that call longtest.Mark (internal/longtest),
# which make test skips, run on their own: each package's marked tests
# with go test -run '^(A|B)$' and a -timeout that fits a loaded machine
# (LONG_TIMEOUT, default 30m: a hang detector). Found by reading the
# _test.go files, so a newly marked test is never dropped. Prints each
# package's time; exit 1 if any failed, 2 if none is marked.
# Environment: GO, LONG_TIMEOUT, GOTESTFLAGS.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
LONG_TIMEOUT=${LONG_TIMEOUT:-30m}
read -r -a extra <<<"${GOTESTFLAGS:-}"
unset KBKIT_SKIP_LONG

declare -A tests=()
while IFS= read -r f; do
	names=$(awk '/^func Test[A-Za-z0-9_]*\(/ { name = $2; sub(/\(.*/, "", name) }
		/longtest\.Mark\(/ && name != "" { print name }' "$f" | sort -u)
	[ -n "$names" ] || continue
	dir=./$(dirname "$f")
	for n in $names; do tests[$dir]+="${tests[$dir]:+|}$n"; done
done < <(grep -rl --include='*_test.go' 'longtest\.Mark(' . | grep -v node_modules | sed 's|^\./||' | sort)

if [ ${#tests[@]} -eq 0 ]; then
	echo "test-long: no test calls longtest.Mark" >&2
	exit 2
fi
rc=0
start=$(date +%s)
for dir in $(printf '%s\n' "${!tests[@]}" | sort); do
	echo "test-long: $dir: ${tests[$dir]//|/, }"
	$GO test "${extra[@]}" -timeout "$LONG_TIMEOUT" -run "^(${tests[$dir]})\$" "$dir" || rc=1
done
echo "test-long: ${#tests[@]} packages in $(($(date +%s) - start)) s"
exit "$rc"
