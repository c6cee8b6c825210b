#!/usr/bin/env bash
# CI: faults of the link between the server and Postgres, and a short soak.
# 1. `make partition` for three faults (blackhole: answered within the
#    server's --db-timeout; reset_peer; flapping): 0 lost, 0 duplicated,
#    0 rejected, every call answered within its bound, every window
#    converged after the heal (about 70 s).
# 2. `make soak DURATION=2m WARMUP=60s`: editing through every fault in
#    turn, the server a process of its own; fails on a loss or a series
#    growing by more than 10 % after the warm-up (a Go heap still settles
#    in the first minute; about 2.5 min).
# Each step is bounded by `timeout`; the script prints how long it took.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
OUT=${OUT:-/tmp/kbkit-ci-partition}
start=$(date +%s)
rc=0
timeout 240 make partition OUT="$OUT" FAULTS="blackhole reset_peer flapping" \
  || { echo "ci-partition: FAILED: make partition" >&2; rc=1; }
timeout 300 make soak OUT="$OUT" DURATION=2m WARMUP=60s \
  || { echo "ci-partition: FAILED: make soak DURATION=2m WARMUP=60s" >&2; rc=1; }
echo "ci-partition: $(( $(date +%s) - start )) s"
exit "$rc"
