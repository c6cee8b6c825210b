#!/usr/bin/env bash
# CI: faults of the link between the server and Postgres. `make partition`
# for three faults (blackhole: answered within the server's --db-timeout;
# reset_peer; flapping): 0 lost, 0 duplicated, 0 rejected, every call
# answered within its bound, every window converged after the heal (about
# 40 s here, compilation cached). The 2-minute soak is scripts/ci-soak.sh.
# Each step is bounded by `timeout`; the script prints how long it took.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
OUT=${OUT:-/tmp/kbkit-ci-partition}
start=$(date +%s)
rc=0
timeout 240 make partition OUT="$OUT" FAULTS="blackhole reset_peer flapping" \
  || { echo "ci-partition: FAILED: make partition" >&2; rc=1; }
echo "ci-partition: $(( $(date +%s) - start )) s"
exit "$rc"
