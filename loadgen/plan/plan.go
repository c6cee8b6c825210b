package plan

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/loadgen/workload"
)

// runSpace namespaces the ids derived from a run id.
var runSpace = uuid.MustParse("0b6c3e52-64a4-4f8e-9d1f-5f0c2a7e4b11")

// Plan is the layout of one run.
type Plan struct {
	RunID   string
	Editors int // of the whole run (every process)
	Pages   int
	PerPage int // windows per page
	Nodes   int // nodes each page starts with
}

// New lays out a run of editors on the workload's pages.
func New(runID string, spec workload.Spec, editors int) Plan {
	pages, perPage := spec.Layout(editors)
	return Plan{RunID: runID, Editors: editors, Pages: pages, PerPage: perPage, Nodes: spec.Nodes}
}

// Derive is a name-based UUID of the run id and parts.
func (p Plan) Derive(parts ...any) string {
	return uuid.NewSHA1(runSpace, fmt.Append([]byte(p.RunID), parts...)).String()
}

// PageID is the id of page i.
func (p Plan) PageID(i int) string { return p.Derive("/page/", i) }

// Tag is the short form of the run id that titles carry.
func (p Plan) Tag() string {
	if len(p.RunID) > 8 {
		return p.RunID[:8]
	}
	return p.RunID
}

// Title is page i's title at creation ("LG <tag> p<i>").
func (p Plan) Title(i int) string { return fmt.Sprintf("LG %s p%d", p.Tag(), i) }

// Titles are every page's title at creation.
func (p Plan) Titles() []string {
	out := make([]string, p.Pages)
	for i := range out {
		out[i] = p.Title(i)
	}
	return out
}

// Editor is the editor (0-based) holding window slot k of page i: slot k
// of page i belongs to editor (i·PerPage + k) mod Editors, so a page's
// windows are distinct editors and every editor gets a window when
// Pages·PerPage >= Editors.
func (p Plan) Editor(page, slot int) int {
	if p.Editors <= 0 {
		return 0
	}
	return (page*p.PerPage + slot) % p.Editors
}

// Creator is the editor whose process creates page i: the holder of its
// first window.
func (p Plan) Creator(page int) int { return p.Editor(page, 0) }

// Slot is one window of the plan.
type Slot struct{ Page, Slot int }

// Windows lists editor e's windows, page by page.
func (p Plan) Windows(e int) []Slot {
	var out []Slot
	for i := 0; i < p.Pages; i++ {
		for k := 0; k < p.PerPage; k++ {
			if p.Editor(i, k) == e {
				out = append(out, Slot{i, k})
			}
		}
	}
	return out
}

// CreatePage creates page i with its title and Nodes seed nodes (s0, s1,
// ...) as device deviceID. The command ids derive from the run id, so a
// repeat, from this process or another of the run, is answered as a
// duplicate, not redone.
func (p Plan) CreatePage(ctx context.Context, c *client.Client, deviceID string, i int) error {
	pageID := p.PageID(i)
	send := func(k int, typ string, payload any) error {
		b, _ := json.Marshal(payload)
		env := kbcore.Envelope{ID: p.Derive("/page/", i, "/cmd/", k), DeviceID: deviceID, PageID: pageID, Type: typ, Payload: b}
		return client.Retry(ctx, 60, func() error {
			_, rej, err := c.Command(ctx, env)
			if err == nil && rej != nil {
				return fmt.Errorf("setup %s on page %d rejected: %s", typ, i, rej.Message)
			}
			return err
		})
	}
	if err := send(0, kbcore.TypeCreatePage, map[string]any{"title": p.Title(i)}); err != nil {
		return err
	}
	for k := 0; k < p.Nodes; k++ {
		pl := map[string]any{"node": fmt.Sprintf("s%d", k), "text": fmt.Sprintf("seed %d", k)}
		if k > 0 {
			pl["after"] = fmt.Sprintf("s%d", k-1)
		}
		if err := send(k+1, kbcore.TypeCreateAfter, pl); err != nil {
			return err
		}
	}
	return nil
}
