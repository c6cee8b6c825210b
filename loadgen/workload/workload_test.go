package workload

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/subspace/kbkit/kbcore"
)

func startDoc(t testing.TB, nodes int) kbcore.Doc {
	t.Helper()
	d := kbcore.Apply(kbcore.Doc{}, kbcore.Command{ID: "p", Type: kbcore.TypeCreatePage, Payload: []byte(`{"title":"T"}`)}).Doc
	for i := 0; i < nodes; i++ {
		res := kbcore.Apply(d, kbcore.Command{ID: fmt.Sprintf("s%d", i), Type: kbcore.TypeCreateAfter, Payload: []byte(`{"text":"x"}`)})
		if res.Rejected != nil {
			t.Fatal(res.Rejected)
		}
		d = res.Doc
	}
	return d
}

// stream draws n commands of spec from seed, applying the accepted ones.
func stream(t *testing.T, spec Spec, seed uint64, n int) (cmds []kbcore.Command, ops map[string]int, rejected int) {
	rng := rand.New(rand.NewPCG(seed, 0))
	d := startDoc(t, spec.Nodes)
	var cur Cursor
	ops = map[string]int{}
	for i := 0; i < n; i++ {
		c := spec.Next(rng, Context{Doc: d, ID: fmt.Sprintf("c%d", i), Titles: []string{"Alpha", "Beta"}, Title: fmt.Sprintf("T%d", i)}, &cur)
		cmds = append(cmds, c)
		ops[c.Type]++
		if res := kbcore.Apply(d, c); res.Rejected == nil {
			d = res.Doc
		} else {
			rejected++
		}
	}
	return cmds, ops, rejected
}

// TestWorkloadsAreSeeded: a workload is a pure function of its seed.
func TestWorkloadsAreSeeded(t *testing.T) {
	for _, name := range Names() {
		spec, _ := Named(name)
		a, _, _ := stream(t, spec, 7, 300)
		b, _, _ := stream(t, spec, 7, 300)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: two streams of one seed differ", name)
		}
		c, _, _ := stream(t, spec, 8, 300)
		if reflect.DeepEqual(a, c) {
			t.Errorf("%s: two seeds give one stream", name)
		}
	}
}

// TestWorkloadMixes: each workload draws its operations, and alone (no
// concurrent editor) they mostly apply.
func TestWorkloadMixes(t *testing.T) {
	want := map[string][]string{
		"typing":       {kbcore.TypeEditText, kbcore.TypeCreateAfter},
		"outline":      {kbcore.TypeCreateAfter, kbcore.TypeMoveNode, kbcore.TypeIndent, kbcore.TypeOutdent, kbcore.TypeDelete},
		"hot-page":     {kbcore.TypeEditText, kbcore.TypeCreateAfter, kbcore.TypeDelete},
		"many-pages":   {kbcore.TypeEditText, kbcore.TypeCreateAfter},
		"rename-storm": {kbcore.TypeEditText, kbcore.TypeRenamePage},
	}
	for _, name := range Names() {
		spec, _ := Named(name)
		_, ops, rejected := stream(t, spec, 1, 2000)
		for _, typ := range want[name] {
			if ops[typ] == 0 {
				t.Errorf("%s: no %s in %v", name, typ, ops)
			}
		}
		if name != "outline" && rejected > 2000/20 {
			t.Errorf("%s: %d of 2000 rejected alone", name, rejected)
		}
	}
}

func TestSetMix(t *testing.T) {
	spec, _ := Named("typing")
	if err := spec.SetMix("edit=0,create=0,delete=5"); err != nil {
		t.Fatal(err)
	}
	if spec.MixString() != "delete=5" {
		t.Errorf("mix %q", spec.MixString())
	}
	for _, bad := range []string{"edit", "edit=-1", "jump=3", "edit=x", "delete=0"} {
		s, _ := Named("typing")
		if err := s.SetMix(bad + ",create=0,edit=0"); err == nil {
			t.Errorf("SetMix(%q) should fail", bad)
		}
	}
	// Named returns a copy: tuning one does not change the next.
	again, _ := Named("typing")
	if again.Mix[Edit] == 0 {
		t.Error("SetMix changed the named workload")
	}
}

func TestLayout(t *testing.T) {
	for _, c := range []struct {
		name           string
		editors        int
		pages, perPage int
	}{{"hot-page", 200, 1, 200}, {"typing", 8, 4, 2}, {"many-pages", 8, 100, 2}, {"typing", 1, 1, 1}, {"typing", 3, 2, 2}} {
		spec, _ := Named(c.name)
		if p, w := spec.Layout(c.editors); p != c.pages || w != c.perPage {
			t.Errorf("%s with %d editors: %d pages × %d, want %d × %d", c.name, c.editors, p, w, c.pages, c.perPage)
		}
	}
}

// TestRapidEncodeIsMarshal: the payload encoder writes json.Marshal's
// bytes.
func TestRapidEncodeIsMarshal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := map[string]any{}
		for i := rapid.IntRange(0, 5).Draw(t, "fields"); i > 0; i-- {
			k := rapid.SampledFrom([]string{"node", "text", "after", "parent", "title", "a<b", "é"}).Draw(t, "key")
			switch rapid.IntRange(0, 3).Draw(t, "kind") {
			case 0:
				m[k] = nil
			case 1:
				m[k] = rapid.String().Draw(t, "any")
			default:
				m[k] = rapid.StringMatching(`[a-z0-9 \[\]#<>&"\\-]{0,12}`).Draw(t, "plain")
			}
		}
		want, _ := json.Marshal(m)
		if got := encode(m); string(got) != string(want) {
			t.Fatalf("%v: encode %s, json.Marshal %s", m, got, want)
		}
	})
}
