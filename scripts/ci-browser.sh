#!/usr/bin/env bash
# ci-browser.sh — kbkit's HTML pages in a real browser: headless Chromium
# (Debian's chromium, installed if missing) renders them and
# scripts/browsercheck checks the DOM it dumped and its screenshots.
#
#  1. go build ./cmd/kbkit and ./scripts/browsercheck
#  2. kbkit conformance run --seed 1 against a broken server
#     (--broken-server double-echo: a proxy logging some commands twice)
#     with --html: the seed fails; its timeline must exist
#  3. Chromium opens the timeline at an exactly-once finding (one about
#     a command acknowledged at a seq the log gives another, if any; #fN): --dump-dom shows lanes of every kind, rendered events, the
#     finding active and its events selected and lit; --screenshot is not
#     blank; opened without a finding, its first screen is the setup
#     collapsed in one row, then a window's first event
#  4. two short load runs (A: hot page, 8 editors at 100/s; B, slower:
#     the same rate over 48 editors, six times the fan-out), then
#     kbkit loadgen compare A A and A B --html: Chromium renders A's report
#     and both comparisons; DOM checked, no chart's title overlapping its
#     legend as Chromium lays them out, screenshots not blank
#  5. a short kbkit loadgen find-max (1 s steps): Chromium renders its
#     page: the verdict, one table row per step, the charts; screenshot
#     not blank
#
# KBKIT_SCREENSHOTS=DIR copies the screenshots there (timeline.png,
# compare.png, report.png, and compare.txt): the committed docs/timeline.png and
# loadgen/docs/compare.png come from this script. Needs Go, PostgreSQL
# server binaries (or KBKIT_PG/KBKIT_PG_DSN) and Debian's apt (as root) when
# chromium is missing. Any failure exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

. scripts/lib/ci.sh
ci_begin ci-browser

. scripts/lib/chrome.sh

go build -o "$WORK/kbkit" ./cmd/kbkit || die "go build ./cmd/kbkit failed"
go build -o "$WORK/browsercheck" ./scripts/browsercheck || die "go build ./scripts/browsercheck failed"
CHECK=$WORK/browsercheck

if [ -z "${KBKIT_PG:-}" ] && [ -z "${KBKIT_PG_DSN:-}" ]; then
	export KBKIT_PG=local
fi

# --- the timeline of a failing seed ---
t0=$(date +%s)
rc=0
"$WORK/kbkit" conformance run --seed 1 --broken-server double-echo --echo-timeout 1s \
	--html "$WORK/tl" --out "$WORK/tl" >"$WORK/conformance.txt" 2>&1 || rc=$?
[ "$rc" = 1 ] || { tail -n 30 "$WORK/conformance.txt" >&2; die "conformance run against the broken server exited $rc, want 1 (a checker failed)"; }
TL=$WORK/tl/seed-1.html
[ -s "$TL" ] || die "no timeline written for the failing seed"
grep -q "timeline: $TL" "$WORK/conformance.txt" || die "the report does not name the timeline"
FINDING=$("$CHECK" finding "$TL" exactly-once acknowledged) || die "the timeline has no exactly-once finding linked to events"
say "seed 1 failed as it should; timeline $(wc -c <"$TL") bytes, exactly-once finding $FINDING ($(( $(date +%s) - t0 ))s)"
# The run shrinks the failing seed and writes the shrunk history's page.
STL=$WORK/tl/seed-1-choices.html
[ -s "$STL" ] && grep -q "timeline: $STL" "$WORK/conformance.txt" || die "no timeline of the shrunk seed named in the report"
grep -q "replayed from [0-9]* choices" "$STL" || die "the shrunk seed's timeline does not say it replays a choice list"

chrome --window-size=1400,1000 --dump-dom "file://$TL#f$FINDING" >"$WORK/tl-dom.html" || die "chromium --dump-dom of the timeline failed"
"$CHECK" timeline "$WORK/tl-dom.html" "$FINDING" >&2 || die "the timeline's rendered DOM"
chrome --window-size=1400,1000 --dump-dom "file://$TL" >"$WORK/tl-first.html" || die "chromium --dump-dom of the timeline failed"
"$CHECK" timeline-first "$WORK/tl-first.html" >&2 || die "the timeline's first screen (setup collapsed, a window's event first)"
chrome --window-size=1400,1000 --screenshot="$WORK/timeline.png" "file://$TL#f$FINDING" >/dev/null || die "chromium --screenshot of the timeline failed"
"$CHECK" png "$WORK/timeline.png" >&2 || die "the timeline's screenshot"

# --- load reports and their comparison ---
t0=$(date +%s)
"$WORK/kbkit" loadgen run --workload hot-page --editors 8 --rate 100 --duration 5s --quiet \
	--json "$WORK/a.json" --html "$WORK/a.html" >"$WORK/a.txt" 2>&1 || { cat "$WORK/a.txt" >&2; die "load run A failed"; }
"$WORK/kbkit" loadgen run --workload hot-page --editors 48 --rate 100 --duration 5s --quiet \
	--json "$WORK/b.json" >"$WORK/b.txt" 2>&1 || { cat "$WORK/b.txt" >&2; die "load run B failed"; }
say "two load runs in $(( $(date +%s) - t0 ))s"
"$WORK/kbkit" loadgen compare "$WORK/a.json" "$WORK/a.json" --html "$WORK/self.html" >"$WORK/self.txt" || die "compare A A failed"
grep -q "better: A on 0 figures, B on 0" "$WORK/self.txt" || { cat "$WORK/self.txt" >&2; die "a run compared with itself is not the same everywhere"; }
"$WORK/kbkit" loadgen compare "$WORK/a.json" "$WORK/b.json" --html "$WORK/compare.html" >"$WORK/compare.txt" || die "compare A B failed"
sed -n '1,4p;/^better:/p' "$WORK/compare.txt" >&2

for p in a self compare; do
	chrome --window-size=1100,1000 --dump-dom "file://$WORK/$p.html" >"$WORK/$p-dom.html" || die "chromium --dump-dom of $p.html failed"
done
"$CHECK" report "$WORK/a-dom.html" >&2 || die "the load report's rendered DOM"
for p in a compare; do
	"$CHECK" chart-layout "$CHROME" "file://$WORK/$p.html" >&2 || die "$p.html: a chart's title overlaps its legend"
done
"$CHECK" compare "$WORK/self-dom.html" >&2 || die "the comparison of a run with itself"
"$CHECK" compare "$WORK/compare-dom.html" >&2 || die "the comparison with a slower run"
chrome --window-size=1100,2300 --screenshot="$WORK/compare.png" "file://$WORK/compare.html" >/dev/null || die "chromium --screenshot of the comparison failed"
chrome --window-size=1100,2300 --screenshot="$WORK/report.png" "file://$WORK/a.html" >/dev/null || die "chromium --screenshot of the report failed"
"$CHECK" png "$WORK/compare.png" >&2 || die "the comparison's screenshot"
"$CHECK" png "$WORK/report.png" >&2 || die "the report's screenshot"

# --- a saturation search's page ---
t0=$(date +%s)
rc=0
"$WORK/kbkit" loadgen find-max --workload hot-page --editors 4 --start-rate 20 --step 1s --warmup 0s --max-steps 3 \
	--threshold 'commit.p99<50ms' --quiet --json "$WORK/max.json" --html "$WORK/max.html" >"$WORK/max.txt" 2>&1 || rc=$?
# 99: no step met the objective on this machine, a finding; its page is drawn all the same.
[ "$rc" = 0 ] || [ "$rc" = 99 ] || { cat "$WORK/max.txt" >&2; die "kbkit loadgen find-max exited $rc"; }
chrome --window-size=1300,2000 --dump-dom "file://$WORK/max.html" >"$WORK/max-dom.html" || die "chromium --dump-dom of the find-max page failed"
steps=$(jq '.steps | length' "$WORK/max.json")
rows=$(sed -n '/id="steps"/,/<\/table>/p' "$WORK/max-dom.html" | grep -c '<tr><td>' || true)
[ "$rows" = "$steps" ] || die "the find-max page shows $rows steps of $steps"
grep -q 'id="headline"><b>sustainable: ' "$WORK/max-dom.html" || die "the find-max page has no verdict"
[ "$(grep -o '<svg class="chart"' "$WORK/max-dom.html" | wc -l)" -ge 3 ] || die "the find-max page lacks its charts"
chrome --window-size=1300,2000 --screenshot="$WORK/max.png" "file://$WORK/max.html" >/dev/null || die "chromium --screenshot of the find-max page failed"
"$CHECK" png "$WORK/max.png" >&2 || die "the find-max page's screenshot"
say "find-max: $(grep '^sustainable' "$WORK/max.txt"), $steps steps, page rendered ($(( $(date +%s) - t0 ))s)"

if [ -n "${KBKIT_SCREENSHOTS:-}" ]; then
	mkdir -p "$KBKIT_SCREENSHOTS"
	cp "$WORK/timeline.png" "$WORK/compare.png" "$WORK/report.png" "$WORK/compare.txt" "$KBKIT_SCREENSHOTS/"
	say "screenshots copied to $KBKIT_SCREENSHOTS"
fi
say "passed in $(( $(date +%s) - START ))s"
