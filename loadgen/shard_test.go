package loadgen

import "testing"

// TestShardsSplitEditors: the shards of a run have disjoint editors that
// together are all of them.
func TestShardsSplitEditors(t *testing.T) {
	for n := 1; n <= 6; n++ {
		for editors := 1; editors <= 25; editors++ {
			owner := map[int]int{}
			for i := 0; i < n; i++ {
				s, err := ParseShard(Shard{i, n}.String())
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range s.Editors(editors) {
					if prev, dup := owner[e]; dup {
						t.Fatalf("n=%d: editor %d in shards %d and %d", n, e, prev, i)
					}
					owner[e] = i
				}
			}
			if len(owner) != editors {
				t.Fatalf("n=%d: shards cover %d of %d editors", n, len(owner), editors)
			}
		}
	}
}

func TestParseShard(t *testing.T) {
	if s, err := ParseShard("1/3"); err != nil || s != (Shard{1, 3}) {
		t.Errorf("ParseShard(1/3) = %v, %v", s, err)
	}
	for _, bad := range []string{"", "1", "3/3", "-1/2", "0/0", "a/b", "1/2/3"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q) should fail", bad)
		}
	}
	if (Shard{}).String() != "0/1" || !(Shard{}).Has(7) {
		t.Error("the zero Shard is the whole run")
	}
}
