#!/usr/bin/env bash
# ci-layout.sh — the module's hygiene and the direction of its imports:
#
#  1. go.mod and go.sum are tidy (`go mod tidy -diff` prints nothing);
#  2. every Go file is gofmt-formatted;
#  3. no package under server/ depends, even indirectly, on a kit (sim/,
#     speckit/, wiresuite/, pgfault/, bench/, loadgen/) or cmd/
#     (cmd -> the kits -> client/server/target -> kbcore);
#  4. loadgen/, client/ and target/ depend on nothing of sim/, speckit/,
#     wiresuite/ or cmd/ (the kits are siblings; client and target are
#     the packages they share);
#  5. kbcore depends on no other package of the module but its own and
#     internal/jsonscan (pure and total, as kbcore must be);
#  6. the wire's shapes have one home (wire/): the server, the client and
#     the wire suite import it, and no other Go file writes the error
#     code table (a JSON-RPC number such as -32700) or kb.limits' fields
#     (a json:"max_body" tag) again;
#  7. the deliberately broken servers (sim/broken) are no part of
#     the simulator: no package but cmd/ and tests imports them;
#  8. one error for a run that cannot start: ErrCannotRun is declared
#     once (target), and one LISTEN loop: only server/pglisten calls
#     WaitForNotification;
#  9. one JSON scanner (internal/jsonscan) and one RFC 6455 frame codec
#     (internal/wsframe): no Go file elsewhere defines the scanner's
#     primitives (white-space skipping, string, number and value
#     readers, the plain-string test) or a frame codec's tell-tales
#     (opcode constants, a header's length byte, a masking loop);
# 10. imports grouped as goimports writes them: no import group mixes the
#     standard library with a module (scripts/importgroups);
# 11. cmd/ is flags and wiring: no function there is over 100 lines
#     (scripts/funclen); a subcommand's orchestration lives in the package
#     it belongs to (loadgen/cli, speckit/cli, sim/cli, ...);
# 12. cmd/ stays thin: at most 1,810 lines of Go outside tests (half of
#     the 3,621 it held before the kits took their orchestration).
#
# Prints what is wrong and exits 1; takes a few seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

say() { echo "ci-layout: $*" >&2; }
rc=0
START=$(date +%s)
MOD=$(go list -m)

if ! diff=$(go mod tidy -diff 2>&1); then
	say "FAILED: go.mod/go.sum are not tidy (run go mod tidy):"
	echo "$diff" >&2
	rc=1
fi

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*'))
if [ -n "$unformatted" ]; then
	say "FAILED: not gofmt-formatted (run gofmt -w):"
	echo "$unformatted" >&2
	rc=1
fi

# deps_violations PATTERN FORBIDDEN: packages matched by PATTERN that depend
# on a package of the module matching the extended regexp FORBIDDEN.
deps_violations() {
	go list -deps -f '{{.ImportPath}}' "$1" | grep -E "^$MOD/($2)(/|\$)" || true
}

bad=$(deps_violations ./server/... 'sim|speckit|wiresuite|pgfault|bench|loadgen|cmd')
if [ -n "$bad" ]; then
	say "FAILED: packages under server/ depend on the test kit or the CLI:"
	echo "$bad" >&2
	for p in $(go list ./server/...); do
		go list -f '{{.ImportPath}}: {{join .Imports " "}}' "$p" | grep -E "$MOD/(sim|speckit|wiresuite|pgfault|bench|loadgen|cmd)" >&2 || true
	done
	rc=1
fi

for pkgs in ./loadgen/... ./client/... ./target/...; do
	bad=$(deps_violations "$pkgs" 'sim|speckit|wiresuite|cmd')
	if [ -n "$bad" ]; then
		say "FAILED: $pkgs depends on the simulator or the CLI:"
		echo "$bad" >&2
		rc=1
	fi
done

bad=$(go list -deps -f '{{.ImportPath}}' ./kbcore/... | grep -E "^$MOD/" | grep -vE "^$MOD/(kbcore|internal/jsonscan)(/|\$)" || true)
if [ -n "$bad" ]; then
	say "FAILED: kbcore depends on other packages of the module:"
	echo "$bad" >&2
	rc=1
fi

for p in ./server ./client ./wiresuite; do
	if ! go list -f '{{join .Imports " "}}' "$p" | tr ' ' '\n' | grep -qx "$MOD/wire"; then
		say "FAILED: $p does not import $MOD/wire (the wire's shapes)"
		rc=1
	fi
done
again=$(git grep -nE -- '\{-32700,|json:"max_body"' -- '*.go' ':!wire/' || true)
if [ -n "$again" ]; then
	say "FAILED: the wire's shapes written again outside wire/:"
	echo "$again" >&2
	rc=1
fi

users=$(go list -f '{{.ImportPath}}: {{join .Imports " "}}' ./... | grep -E " $MOD/sim/broken( |\$)" | grep -vE "^$MOD/cmd/" || true)
if [ -n "$users" ]; then
	say "FAILED: packages other than cmd/ import the broken servers:"
	echo "$users" >&2
	rc=1
fi
decl=$(git grep -nE '^(var )?\s*ErrCannotRun\s*=' -- '*.go' || true)
if [ "$(printf '%s\n' "$decl" | grep -c .)" != 1 ]; then
	say "FAILED: ErrCannotRun must be declared once (target/target.go):"
	echo "$decl" >&2
	rc=1
fi
loops=$(git grep -ln 'WaitForNotification(' -- '*.go' ':!*_test.go' ':!server/pglisten/' || true)
if [ -n "$loops" ]; then
	say "FAILED: a LISTEN loop outside server/pglisten:"
	echo "$loops" >&2
	rc=1
fi

# scan_rule WHAT REGEXP: Go files outside the two internal packages that
# match REGEXP (git grep -E).
scan_rule() {
	local hits
	hits=$(git grep -nE "$2" -- '*.go' ':!internal/jsonscan/' ':!internal/wsframe/' || true)
	if [ -n "$hits" ]; then
		say "FAILED: $1 outside internal/jsonscan and internal/wsframe:"
		echo "$hits" >&2
		rc=1
	fi
}
scan_rule "a JSON scanner's primitive (use internal/jsonscan)" \
	"func (skipSpace|plainString|plainJSON|compactPlain|isHex|isSpace)\(|func \([a-z]+ \*?[a-zA-Z]*[sS]can[a-zA-Z]*\) (ws|str|plain|number|skipValue|skipObject|eat|peek|null|lit)\(|case ' ', '\\\\t', '\\\\n', '\\\\r'"
scan_rule "an RFC 6455 frame codec (use internal/wsframe)" \
	"\b[oO]p(Continuation|Ping|Pong)[[:space:]]*=|\^=? *(key|mask|k)\[[^]]*(&|%) *[34]\]|0x80 ?\| ?(126|127)|func (mask|unmask|appendFrame)\("

if ! mixed=$(go run ./scripts/importgroups $(git ls-files '*.go')); then
	say "FAILED: the standard library's imports share a group with a module's (run goimports -w):"
	echo "$mixed" >&2
	rc=1
fi

if ! long=$(go run ./scripts/funclen -max 100 $(git ls-files 'cmd/*.go' | grep -v '_test\.go$')); then
	say "FAILED: cmd/ is flags and wiring; move the orchestration into its package:"
	echo "$long" >&2
	rc=1
fi

cmdFiles=$(git ls-files 'cmd/*.go' | grep -v '_test\.go$')
cmdLines=$(cat $cmdFiles | wc -l)
if [ "$cmdLines" -gt 1810 ]; then
	say "FAILED: cmd/ is flags and wiring, at most 1810 lines of Go outside tests; it has $cmdLines (move the orchestration into its package):"
	wc -l $cmdFiles | sort -rn >&2
	rc=1
fi

[ "$rc" = 0 ] && say "passed in $(( $(date +%s) - START ))s"
exit "$rc"
