package main

import (
	"strings"
	"testing"
)

// TestCallErrors: malformed input to every operation is an error with a
// message, never a panic, and a closed window stays closed.
func TestCallErrors(t *testing.T) {
	s := newSession()
	junk := [][]byte{nil, []byte("{"), []byte("[]"), []byte(`{"nodes":5}`), []byte("\xff")}
	for op := 0; op <= opCanonicalValue+1; op++ {
		for _, j := range junk {
			_, _ = s.call(op, [2]int64{1, -1}, [4][]byte{j, j, j, j}) // must not panic
		}
	}
	for _, tc := range []struct {
		op   int
		ints [2]int64
		args [4][]byte
		want string
	}{
		{opApply, [2]int64{}, [4][]byte{[]byte("{")}, "invalid document"},
		{opApply, [2]int64{}, [4][]byte{[]byte(`{"nodes":[],"page":{"id":"p1","title":"T"}}`), []byte("7")}, "cmd:"},
		{opRankBetween, [2]int64{}, [4][]byte{[]byte("a1"), []byte("a0")}, "rank"},
		{opWindowLocal, [2]int64{99}, [4][]byte{}, "no open window 99"},
		{opWindowOpen, [2]int64{-1}, [4][]byte{[]byte(`{"nodes":[],"page":{"id":"p1","title":"T"}}`)}, "negative"},
		{opPlan, [2]int64{}, [4][]byte{[]byte(`{"pages":[]}`)}, "cmd is missing"},
		{0, [2]int64{}, [4][]byte{}, "unknown operation"},
	} {
		_, err := s.call(tc.op, tc.ints, tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("op %d: error %v, want one saying %q", tc.op, err, tc.want)
		}
	}
	h, err := s.call(opWindowOpen, [2]int64{3}, [4][]byte{[]byte(`{"nodes":[],"page":{"id":"p1","title":"T"}}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.call(opWindowClose, [2]int64{int64(h[0] - '0')}, [4][]byte{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.call(opWindowState, [2]int64{int64(h[0] - '0')}, [4][]byte{}); err == nil {
		t.Error("a closed window answered")
	}
}
