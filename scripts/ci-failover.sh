#!/usr/bin/env bash
# CI: Postgres failover. 1. `make failover`: a bounded load through the loss
# of the primary's machine with a synchronous standby; fails if anything
# acknowledged was lost, duplicated or moved, a seq was reused or a window
# did not converge (about 10 s). 2. The simulator's failover fault for a few
# seeds (SEEDS, default 3; about 10 s): every checker must pass.
# Each step is bounded by `timeout`; the script prints how long it took.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
SEEDS=${SEEDS:-3}
start=$(date +%s)
rc=0
timeout 180 make failover || { echo "ci-failover: FAILED: make failover" >&2; rc=1; }
timeout 300 go run ./cmd/kbkit conformance run --seeds "$SEEDS" --faults --topology sync-standby \
  --junit /tmp/kbkit-conformance-failover-junit.xml \
  || { echo "ci-failover: FAILED: the simulator's failover fault (--topology sync-standby)" >&2; rc=1; }
echo "ci-failover: $(( $(date +%s) - start )) s"
exit "$rc"
