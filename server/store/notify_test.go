package store

import (
	"fmt"
	"strings"
	"testing"
)

// A transaction's page heads go out in as few NotifyChannel payloads as
// fit under PostgreSQL's limit, and come back whole, in order.
func TestNotifyPayloadsRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 2, 64, 500} {
		var pages, heads []string
		var seqs []int64
		for i := range n {
			pages = append(pages, fmt.Sprintf("%08d-0000-4000-8000-000000000000", i))
			seqs = append(seqs, int64(1+i*1000003))
			heads = append(heads, fmt.Sprintf("%s:%d", pages[i], seqs[i]))
		}
		payloads := NotifyPayloads(pages, seqs)
		var got []string
		for _, p := range payloads {
			if len(p) > notifyMax || p == "" {
				t.Fatalf("%d heads: a payload of %d bytes", n, len(p))
			}
			NotifyHeads(p, func(page string, seq int64) { got = append(got, fmt.Sprintf("%s:%d", page, seq)) })
		}
		if strings.Join(got, ",") != strings.Join(heads, ",") {
			t.Fatalf("%d heads: got back %d of them (%v)", n, len(got), got)
		}
		// Packed: each payload but the last is too full for the next head.
		for i, p := range payloads[:max(len(payloads)-1, 0)] {
			next := strings.Fields(payloads[i+1])[0]
			if len(p)+1+len(next) <= notifyMax {
				t.Fatalf("%d heads: payload %d (%d bytes) had room for %q", n, i, len(p), next)
			}
		}
	}
	// The format of one head per payload (and bad entries) still parses.
	var got []string
	NotifyHeads("a:1 junk b:x c:3", func(page string, seq int64) { got = append(got, fmt.Sprint(page, seq)) })
	if strings.Join(got, ",") != "a1,c3" {
		t.Fatalf("got %v", got)
	}
}
