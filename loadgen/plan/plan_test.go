package plan_test

import (
	"context"
	"os"
	"testing"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/loadgen/plan"
	"github.com/subspace/kbkit/loadgen/workload"
	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/target"
)

func TestMain(m *testing.M) { os.Exit(pgprovider.RunTests(m)) }

// TestLayout: for every workload and several run sizes, each editor has a
// window when there are as many slots as editors, a page's windows belong to distinct editors, and Windows agrees
// with Editor slot by slot.
func TestLayout(t *testing.T) {
	for _, name := range workload.Names() {
		spec, _ := workload.Named(name)
		for _, editors := range []int{1, 2, 3, 16, 17, 250} {
			p := plan.New("layout", spec, editors)
			slots := 0
			for e := 0; e < editors; e++ {
				ws := p.Windows(e)
				if len(ws) == 0 && p.Pages*p.PerPage >= editors {
					t.Errorf("%s/%d: editor %d has no window", name, editors, e)
				}
				for _, s := range ws {
					if p.Editor(s.Page, s.Slot) != e {
						t.Errorf("%s/%d: slot %v is editor %d's, not %d", name, editors, s, p.Editor(s.Page, s.Slot), e)
					}
				}
				slots += len(ws)
			}
			if slots != p.Pages*p.PerPage {
				t.Errorf("%s/%d: %d windows listed, %d × %d laid out", name, editors, slots, p.Pages, p.PerPage)
			}
			for pg := 0; pg < p.Pages; pg++ {
				seen := map[int]bool{}
				for k := 0; k < p.PerPage; k++ {
					if seen[p.Editor(pg, k)] {
						t.Errorf("%s/%d: page %d has editor %d twice", name, editors, pg, p.Editor(pg, k))
					}
					seen[p.Editor(pg, k)] = true
				}
			}
		}
	}
}

// TestIDsDeriveFromTheRun: two processes of one run derive the same page
// ids; another run derives others.
func TestIDsDeriveFromTheRun(t *testing.T) {
	spec, _ := workload.Named("many-pages")
	a, b, other := plan.New("r1", spec, 8), plan.New("r1", spec, 8), plan.New("r2", spec, 8)
	if a.PageID(3) != b.PageID(3) || a.PageID(3) == a.PageID(4) || a.PageID(3) == other.PageID(3) {
		t.Error("page ids do not derive from the run id and the page")
	}
	if a.Title(2) != "LG r1 p2" || plan.New("0123456789", spec, 1).Tag() != "01234567" {
		t.Errorf("title %q", a.Title(2))
	}
}

// TestCreatePageIsIdempotent: creating a page twice (two processes of a
// run) leaves one page with its seed nodes, the second answered as
// duplicates.
func TestCreatePageIsIdempotent(t *testing.T) {
	ctx := context.Background()
	e, err := target.NewEmbedded(ctx, pgprovider.ForTest(t), target.EmbeddedOptions{Instances: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	tokens, err := e.Devices(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(e.Endpoints()[0], tokens[0])
	me, err := c.Whoami(ctx)
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := workload.Named("typing")
	p := plan.New("idem-"+t.Name(), spec, 4)
	for range 2 {
		if err := p.CreatePage(ctx, c, me.DeviceID, 1); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := c.Page(ctx, p.PageID(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Doc.Len() != spec.Nodes || snap.Seq != int64(1+spec.Nodes) || snap.Doc.Page().Title != p.Title(1) {
		t.Errorf("page: %d nodes at seq %d titled %q, want %d nodes at seq %d titled %q",
			snap.Doc.Len(), snap.Seq, snap.Doc.Page().Title, spec.Nodes, 1+spec.Nodes, p.Title(1))
	}
}
