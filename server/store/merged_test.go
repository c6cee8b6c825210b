package store

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestMergedTextNumbersEveryPart: for every sequence of parts flush can
// make (any subset, in the order it adds them), the merged statement
// numbers its parameters $1 to $N without a gap, each part's after the
// ones before it, and is a WITH of the writes selecting the expressions.
func TestMergedTextNumbersEveryPart(t *testing.T) {
	ref := regexp.MustCompile(`\$([0-9]+)`)
	params := func(sql string) int {
		n := 0
		for _, m := range ref.FindAllStringSubmatch(sql, -1) {
			i, _ := strconv.Atoi(m[1])
			n = max(n, i)
		}
		return n
	}
	all := []mergedPart{partLogCommitted, partLogRejected, partUpsertNodes, partGuard, partPageSeqs, partGuardCheck, partNotify}
	for mask := 1; mask < 1<<len(all); mask++ {
		var parts []mergedPart
		want := 0
		for i, p := range all {
			if mask&(1<<i) != 0 {
				parts = append(parts, p)
				want += params(mergedParts[p].sql)
			}
		}
		q := mergedText(parts)
		seen := map[int]bool{}
		for _, m := range ref.FindAllStringSubmatch(q, -1) {
			i, _ := strconv.Atoi(m[1])
			seen[i] = true
		}
		for i := 1; i <= want; i++ {
			if !seen[i] {
				t.Fatalf("parts %v: $%d missing from %s", parts, i, q)
			}
		}
		if len(seen) != want {
			t.Fatalf("parts %v: %d parameters, want %d: %s", parts, len(seen), want, q)
		}
		if q != mergedText(parts) {
			t.Fatalf("parts %v: the text is not the same twice", parts)
		}
		writes := mask&(1<<5-1) != 0
		if strings.HasPrefix(q, "WITH ") != writes || !strings.Contains(q, "\nSELECT ") && writes {
			t.Fatalf("parts %v: %s", parts, q)
		}
	}
}
