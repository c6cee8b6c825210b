#!/usr/bin/env bash
# Reads `go test -bench BenchmarkApply -count N` output and prints, per
# operation, the median ns/op at each page size and the ratio
# n=100000 / n=100 (target <= 2.0), plus the median allocs/op of edit-text
# at 100k nodes (target <= 30). Medians, because a 2-core machine is noisy.
set -euo pipefail
awk '
function median(list,   n, v, i, j, t) {
  n = split(list, v, " ")
  for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
  return v[int((n + 1) / 2)]
}
/^BenchmarkApply\// {
  split($1, parts, "/"); op = parts[2]; n = parts[3]; sub(/-[0-9]+$/, "", n); sub(/^n=/, "", n)
  ns[op "," n] = ns[op "," n] " " $3
  for (i = 4; i <= NF; i++) if ($(i) == "allocs/op") allocs[op "," n] = allocs[op "," n] " " $(i-1)
  ops[op] = 1
}
END {
  printf "%-14s %12s %12s %12s %10s\n", "operation", "n=100", "n=10000", "n=100000", "100k/100"
  bad = 0
  for (op in ops) {
    a = median(ns[op ",100"]); b = median(ns[op ",10000"]); c = median(ns[op ",100000"])
    r = c / a
    printf "%-14s %10.0fns %10.0fns %10.0fns %10.2f\n", op, a, b, c, r
    if (r > 2.0) bad = 1
  }
  printf "edit-text allocs/op at 100k nodes: %d (target <= 30)\n", median(allocs["edit-text,100000"])
  if (bad) print "ratio target (<= 2.0) missed"; else print "ratio target (<= 2.0) met"
}' "$1"
