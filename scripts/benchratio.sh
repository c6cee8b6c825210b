#!/usr/bin/env bash
# Reads `go test -bench BenchmarkApply` output and prints, per operation,
# ns/op at each page size and the ratio n=100000 / n=100 (target <= 2.0),
# plus allocs/op of edit-text at 100k nodes (target <= 30).
set -euo pipefail
awk '
/^BenchmarkApply\// {
  split($1, parts, "/"); op = parts[2]; n = parts[3]; sub(/-[0-9]+$/, "", n); sub(/^n=/, "", n)
  ns[op "," n] = $3
  for (i = 4; i <= NF; i++) if ($(i) == "allocs/op") allocs[op "," n] = $(i-1)
  ops[op] = 1
}
END {
  printf "%-14s %12s %12s %12s %10s\n", "operation", "n=100", "n=10000", "n=100000", "100k/100"
  bad = 0
  for (op in ops) {
    r = ns[op ",100000"] / ns[op ",100"]
    printf "%-14s %10.0fns %10.0fns %10.0fns %10.2f\n", op, ns[op ",100"], ns[op ",10000"], ns[op ",100000"], r
    if (r > 2.0) bad = 1
  }
  printf "edit-text allocs/op at 100k nodes: %d (target <= 30)\n", allocs["edit-text,100000"]
  if (bad) print "ratio target (<= 2.0) missed"
}' "$1"
