package store

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/subspace/kbkit/kbcore"
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
	// flush's order: guardInto adds the guard with its check.
	all := []mergedPart{partLogCommitted, partLogRejected, partUpsertNodes, partGuard, partGuardCheck, partPageSeqs, partNotify}
	for mask := 1; mask < 1<<len(all); mask++ {
		var parts []mergedPart
		want, writes := 0, false
		for i, p := range all {
			if mask&(1<<i) != 0 {
				parts = append(parts, p)
				want += params(mergedParts[p].sql)
				writes = writes || !mergedParts[p].sel
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
		if strings.HasPrefix(q, "WITH ") != writes || !strings.Contains(q, "\nSELECT ") && writes {
			t.Fatalf("parts %v: %s", parts, q)
		}
	}
}

// loadgen/README.md states how many statements an optimistic group of
// edits on distinct pages sends (its one round trip); this counts them on
// a real group: the batch the group hook sees, and COMMIT.
func TestDocsStateTheStatementsOfAGroup(t *testing.T) {
	st, dev, _ := setup(t)
	const n = 8
	pages := make([]string, n)
	for i := range pages {
		pages[i] = uuid.NewString()
		mustSubmit(t, st, dev, env(pages[i], "create-page", map[string]any{"title": fmt.Sprintf("Group %d", i)}))
		mustSubmit(t, st, dev, env(pages[i], "create-after", map[string]any{"node": "n", "text": ""}))
	}
	var mu sync.Mutex
	statements := 0 // of an optimistic group of two or more edits
	st.groupHook = func(k int, b *pgx.Batch) error {
		mu.Lock()
		defer mu.Unlock()
		// The optimistic path's batch opens the transaction itself; the
		// usual path's writes follow a round trip of their own.
		if k >= 2 && len(b.QueuedQueries) > 0 && b.QueuedQueries[0].SQL == sqlBegin {
			statements = b.Len() + 1 // and COMMIT
		}
		return nil
	}
	for round := 0; round < 50; round++ {
		envs := make([]kbcore.Envelope, n)
		for i, p := range pages {
			envs[i] = env(p, "edit-text", map[string]any{"node": "n", "text": fmt.Sprintf("r%d w%d", round, i)})
		}
		submitAtOnce(t, st, dev, envs)
		mu.Lock()
		got := statements
		mu.Unlock()
		if got > 0 {
			break
		}
	}
	if statements == 0 {
		t.Fatal("no optimistic group of two or more edits formed in 50 rounds")
	}
	b, err := os.ReadFile("../../loadgen/README.md")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("is %d statements in its one round trip", statements)
	if !strings.Contains(strings.Join(strings.Fields(string(b)), " "), want) {
		t.Fatalf("loadgen/README.md does not say %q", want)
	}
}
