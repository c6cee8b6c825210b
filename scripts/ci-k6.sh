#!/usr/bin/env bash
# ci-k6.sh — kbkit inside k6: build bin/k6-kbkit (make k6) and drive the
# reference server with it.
#
#  1. make k6 (k6 v1.8.1 with k6/x/kbkit) and go build ./cmd/kbkit; go vet
#     and go test the extension's module (k6/: its own go.mod, so the
#     main module's make test does not reach it)
#  2. kbkit serve --addr 127.0.0.1:0 (a throwaway PostgreSQL from this
#     machine's binaries unless KBKIT_PG or KBKIT_PG_DSN says otherwise);
#     read the url and token of its JSON line
#  3. a 10-second examples/k6/hot-page.js: k6 must exit 0 (every threshold
#     holds) and its summary must show kbkit_commit (and the other kbkit
#     metrics, with samples in --summary-export)
#  4. the same script with an impossible p99 bound for 3 s: k6 must exit 99
#     (thresholds crossed)
#  5. two k6 processes at once with complementary --execution-segment
#     values and one KBKIT_RUN_ID on the same server: both exit 0 (p99
#     bounds of 1 s: two k6 processes share the cores), and
#     `kbkit loadgen report` merges their kbkit JSON (it refuses an editor
#     run twice) into a result where each of the 16 editors ran once
#  5b. the same with examples/k6/many-pages.js (pagesBySegment: each
#     page's windows in one process): each process's result has
#     fan-out samples (none when k6's striped numbering splits a page), its file named from its
#     segment (KBKIT_JSON with {segment}), and the merge runs each of the
#     16 editors once
#  5c. the same many-pages run in two containers at once of the k6-kbkit
#     image (scripts/k6-image.sh: FROM scratch, no registry) on a Docker
#     engine (scripts/lib/dockerd.sh: the one that answers, else its own
#     dockerd --bridge=none --iptables=false, stopped at exit; the step
#     fails when none can start), host networking, the script mounted
#     read-only and the results written by the image's user into a
#     mounted directory; the merge runs each of the 16 editors once and
#     names both segments; the containers are removed on every path
#  6. a 3-second run with k6's web dashboard exporting its HTML report
#     (K6_WEB_DASHBOARD=true, K6_WEB_DASHBOARD_EXPORT, port -1): the
#     report exists, its embedded data holds the kbkit metrics, and
#     headless Chromium renders them in its Summary section
#  7. stop the server with SIGTERM (it must exit cleanly)
# Any failure exits non-zero. Needs Go and PostgreSQL server binaries (or
# a DSN); the Go module proxy for k6's modules on the first build; a
# Docker engine, or root to start one (and to install Debian's docker.io).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

. scripts/lib/ci.sh
. scripts/lib/serve.sh
ci_begin ci-k6
. scripts/lib/dockerd.sh
# Step 5c's containers and image, removed on every path (IMAGE is set
# while they may exist).
IMAGE=
CTR_LABEL=kbkit-ci-k6=$$
containers() { docker ps -aq --filter "label=$CTR_LABEL"; }
ci_on_exit() {
	if [ -n "$IMAGE" ]; then
		containers | xargs -r docker rm -f >/dev/null 2>&1 || true
		docker image rm -f "$IMAGE" >/dev/null 2>&1 || true
	fi
	dockerd_stop
}

command -v go >/dev/null 2>&1 || die "go is required"

t0=$(date +%s)
make k6 >"$WORK/build.log" 2>&1 || { tail -n 30 "$WORK/build.log" >&2; die "make k6 failed"; }
BIN=$WORK/kbkit
go build -o "$BIN" ./cmd/kbkit || die "go build ./cmd/kbkit failed"
K6=bin/k6-kbkit
say "built $K6 and kbkit in $(( $(date +%s) - t0 ))s"
t0=$(date +%s)
(cd k6 && go vet ./... && go test ./...) >&2 || die "go vet or go test in k6/ failed"
say "k6/: go vet and go test passed in $(( $(date +%s) - t0 ))s"
"$K6" version | head -n 1 >&2

say "starting kbkit serve --addr 127.0.0.1:0"
serve_start "$BIN" "$WORK"
KBKIT_URL=$(serve_field url)
KBKIT_TOKEN=$(serve_field token)
[ -n "$KBKIT_URL" ] && [ -n "$KBKIT_TOKEN" ] || die "no url or token in $(cat "$WORK/serve.json")"
export KBKIT_URL KBKIT_TOKEN
say "server at $KBKIT_URL"

# k6's REST API is off (--address ''): two processes run at once.
run_k6() { "$K6" run --quiet --no-color --address '' "$@"; }

# 3. The 10-second hot page. Its p99 bounds are 1 s here (the example's
# default is 250 ms): about 1,000 commands on 2 cores shared with
# Postgres and the server, so ten commands behind one fsync or GC stall
# are the whole p99; step 4 shows that a crossed bound fails the run.
t0=$(date +%s)
rc=0
KBKIT_P99=${KBKIT_P99:-1000} KBKIT_JSON=$WORK/hot.json run_k6 --summary-export "$WORK/hot.sum.json" examples/k6/hot-page.js \
	>"$WORK/hot.out" 2>&1 || rc=$?
cat "$WORK/hot.out" >&2
[ "$rc" = 0 ] || die "examples/k6/hot-page.js exited $rc (99: a threshold was crossed)"
for m in kbkit_commit kbkit_echo kbkit_fanout kbkit_convergence kbkit_errors; do
	grep -q "$m" "$WORK/hot.out" || die "the summary lacks $m"
	grep -q "\"$m\"" "$WORK/hot.sum.json" || die "--summary-export lacks $m"
done
grep -Eq 'kbkit_commit\.*: avg=' "$WORK/hot.out" || die "kbkit_commit has no samples in the summary"
"$BIN" loadgen report "$WORK/hot.json" --threshold 'errors==0' --threshold 'committed>=500' >&2 ||
	die "kbkit's result of the hot-page run: errors, or fewer than 500 commands committed"
say "hot-page.js passed in $(( $(date +%s) - t0 ))s"

# 4. A crossed threshold fails the run.
t0=$(date +%s)
rc=0
KBKIT_DURATION=3s KBKIT_P99=0.001 run_k6 examples/k6/hot-page.js >"$WORK/broken.out" 2>&1 || rc=$?
[ "$rc" = 99 ] || { cat "$WORK/broken.out" >&2; die "a crossed threshold exited $rc, want 99"; }
grep -q "thresholds on metrics 'kbkit_" "$WORK/broken.out" || die "k6 did not name the crossed kbkit threshold"
say "a crossed threshold exits 99 ($(( $(date +%s) - t0 ))s)"

# 5. Two processes, complementary execution segments, one run.
t0=$(date +%s)
export KBKIT_RUN_ID=ci-k6-$$-$(date +%s)
SEQ=0,1/2,1
pids=()
for seg in 0:1/2 1/2:1; do
	n=${seg%%:*}; n=${n//\//_}
	# Coverage is the point here: a looser p99 bound (1 s) than step 3's,
	# for two k6 processes sharing 2 cores with the server.
	KBKIT_P99=1000 KBKIT_JSON=$WORK/seg$n.json run_k6 --execution-segment "$seg" --execution-segment-sequence "$SEQ" \
		examples/k6/hot-page.js >"$WORK/seg$n.out" 2>&1 &
	pids+=($!)
done
for i in 0 1; do
	rc=0
	wait "${pids[$i]}" || rc=$?
	[ "$rc" = 0 ] || { cat "$WORK"/seg*.out >&2; die "segment process $i exited $rc"; }
done
"$BIN" loadgen report "$WORK/seg0.json" "$WORK/seg1_2.json" --json "$WORK/merged.json" \
	--threshold 'errors==0' >"$WORK/merged.txt" || { cat "$WORK/merged.txt" >&2; die "kbkit loadgen report refused the segments' results"; }
cat "$WORK/merged.txt" >&2
grep -q '^editors      16 of 16 ran$' "$WORK/merged.txt" || die "the two segments did not run each of the 16 editors once"
grep -q '(shards 0:1/2 1/2:1)' "$WORK/merged.txt" || die "the merged result lacks a segment"
say "two segments covered 16 editors once in $(( $(date +%s) - t0 ))s"

# 5b. The same with examples/k6/many-pages.js, whose pagesBySegment keeps
# each page's two windows in one process: each process measures the
# fan-out to the other window of its pages, and the merge counts every
# editor once. Each process names
# its file from its segment (KBKIT_JSON with {segment}, as the runners of
# a k6-operator TestRun share one environment).
t0=$(date +%s)
export KBKIT_RUN_ID=ci-k6-pages-$$-$(date +%s)
pids=()
for seg in 0:1/2 1/2:1; do
	n=${seg%%:*}; n=${n//\//_}
	KBKIT_EDITORS=16 KBKIT_PAGES=8 KBKIT_RATE=40 KBKIT_JSON="$WORK/pages-{segment}.json" \
		run_k6 --execution-segment "$seg" --execution-segment-sequence "$SEQ" --no-thresholds \
		examples/k6/many-pages.js >"$WORK/pages$n.out" 2>&1 &
	pids+=($!)
done
for i in 0 1; do
	rc=0
	wait "${pids[$i]}" || rc=$?
	[ "$rc" = 0 ] || { cat "$WORK"/pages*.out >&2; die "many-pages segment process $i exited $rc"; }
done
for f in "$WORK/pages-0-1_2.json" "$WORK/pages-1_2-1.json"; do
	[ -s "$f" ] || die "no result at $f ({segment} in KBKIT_JSON)"
	# Split by k6's striped numbering, each page's two windows would be
	# in two processes, and no process would see a fan-out.
	jq -e '.counts.committed > 0 and .summary.latency_ms.fanout.count > 0' "$f" >/dev/null ||
		die "$f: no fan-out measured (a page's windows in two processes?): $(jq -c '{committed: .counts.committed, fanout: .summary.latency_ms.fanout.count}' "$f")"
done
"$BIN" loadgen report "$WORK/pages-0-1_2.json" "$WORK/pages-1_2-1.json" --threshold 'errors==0' >"$WORK/pages-merged.txt" ||
	{ cat "$WORK/pages-merged.txt" >&2; die "kbkit loadgen report refused the many-pages segments' results"; }
grep -q '^editors      16 of 16 ran$' "$WORK/pages-merged.txt" || { cat "$WORK/pages-merged.txt" >&2; die "the many-pages segments did not run each of the 16 editors once"; }
say "many-pages over two segments, each page in one process: 16 editors once ($(( $(date +%s) - t0 ))s)"

# 5c. The many-pages run of 5b in two containers of the k6-kbkit image
# at once (host networking: the server is on the host's loopback). Each
# writes its result into a directory mounted from here, as the image's
# user (65532), named from its segment.
t0=$(date +%s)
dockerd_ensure
IMAGE=k6-kbkit:ci-k6-$$
scripts/k6-image.sh -t "$IMAGE" -b "$K6" >/dev/null || die "scripts/k6-image.sh could not build the image"
say "image $IMAGE: $(docker image inspect --format '{{.Size}}' "$IMAGE") bytes ($(( $(date +%s) - t0 ))s)"
export KBKIT_RUN_ID=ci-k6-image-$$-$(date +%s)
OUT=$WORK/image-out
mkdir -p "$OUT"
chmod 777 "$OUT"
pids=()
for seg in 0:1/2 1/2:1; do
	n=${seg%%:*}; n=${n//\//_}
	docker run --rm --name "ci-k6-$$-seg$n" --label "$CTR_LABEL" --network host \
		-v "$PWD/examples/k6:/scripts:ro" -v "$OUT:/out" \
		-e KBKIT_URL -e KBKIT_TOKEN -e KBKIT_RUN_ID -e KBKIT_EDITORS=16 -e KBKIT_PAGES=8 -e KBKIT_RATE=40 \
		-e 'KBKIT_JSON=/out/pages-{segment}.json' \
		"$IMAGE" run --quiet --no-color --address '' --execution-segment "$seg" --execution-segment-sequence "$SEQ" \
		--no-thresholds /scripts/many-pages.js >"$WORK/image$n.out" 2>&1 &
	pids+=($!)
done
for i in 0 1; do
	rc=0
	wait "${pids[$i]}" || rc=$?
	[ "$rc" = 0 ] || { cat "$WORK"/image*.out >&2; die "the container of segment $i exited $rc"; }
done
for f in "$OUT/pages-0-1_2.json" "$OUT/pages-1_2-1.json"; do
	[ -s "$f" ] || die "no result at $f from the container"
	[ "$(stat -c %u "$f")" = 65532 ] || die "$f was not written by the image's user (uid $(stat -c %u "$f"), want 65532)"
done
"$BIN" loadgen report "$OUT/pages-0-1_2.json" "$OUT/pages-1_2-1.json" --threshold 'errors==0' >"$WORK/image-merged.txt" ||
	{ cat "$WORK/image-merged.txt" >&2; die "kbkit loadgen report refused the containers' results"; }
cat "$WORK/image-merged.txt" >&2
grep -q '^editors      16 of 16 ran$' "$WORK/image-merged.txt" || die "the two containers did not run each of the 16 editors once"
grep -q '(shards 0:1/2 1/2:1)' "$WORK/image-merged.txt" || die "the containers' merged result lacks a segment"
left=$(containers) || die "docker ps failed"
[ -z "$left" ] || die "containers of this run are left: $(paste -sd ' ' <<<"$left")"
docker image rm "$IMAGE" >/dev/null || die "docker image rm $IMAGE failed"
IMAGE=
# Later steps need no engine: stop one started here now.
dockerd_stop
say "two containers of the image, complementary segments: 16 editors once ($(( $(date +%s) - t0 ))s)"

# 6. k6's web dashboard and its HTML export (K6_WEB_DASHBOARD_PORT=-1:
# no dashboard server, which would wait for a browser and take a port
# of this shared machine; a period of 1 s: a run shorter than the period,
# 10 s by default, exports nothing): the report exists and its embedded
# data declares the kbkit metrics and carries values.
t0=$(date +%s)
go build -o "$WORK/browsercheck" ./scripts/browsercheck || die "go build ./scripts/browsercheck failed"
KBKIT_DURATION=3s KBKIT_P99=1000 K6_WEB_DASHBOARD=true K6_WEB_DASHBOARD_PORT=-1 K6_WEB_DASHBOARD_PERIOD=1s \
	K6_WEB_DASHBOARD_EXPORT=$WORK/dashboard.html run_k6 examples/k6/hot-page.js >"$WORK/dash.out" 2>&1 ||
	{ cat "$WORK/dash.out" >&2; die "hot-page.js with the web dashboard failed"; }
[ -s "$WORK/dashboard.html" ] || die "K6_WEB_DASHBOARD_EXPORT wrote no report"
"$WORK/browsercheck" k6report "$WORK/dashboard.html" kbkit_commit kbkit_echo kbkit_fanout kbkit_convergence >&2 ||
	die "the web dashboard's report lacks the kbkit metrics"
# Where examples/k6/README.md sends readers: the Summary section, as
# Chromium renders the report.
. scripts/lib/chrome.sh
chrome --window-size=1280,3000 --virtual-time-budget=5000 --dump-dom "file://$WORK/dashboard.html" >"$WORK/dashboard-dom.html" ||
	die "chromium --dump-dom of the web dashboard's report failed"
"$WORK/browsercheck" k6summary "$WORK/dashboard-dom.html" kbkit_commit kbkit_echo kbkit_errors >&2 ||
	die "the web dashboard's rendered Summary section does not show the kbkit metrics"
say "web dashboard report: $(wc -c <"$WORK/dashboard.html") bytes ($(( $(date +%s) - t0 ))s)"

say "stopping kbkit serve"
serve_stop
say "passed in $(( $(date +%s) - START ))s"
