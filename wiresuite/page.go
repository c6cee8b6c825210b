package wiresuite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/google/uuid"

	"github.com/subspace/kbkit/kbcore"
)

// page is a page a check created, with what it expects the server to
// hold: the commands by seq and the document folded from them.
type page struct {
	id    string
	title string
	seq   int64
	nodes int
	doc   kbcore.Doc
	cmds  map[int64]kbcore.Command
}

func newID() string { return uuid.NewString() }

// envelope is a kb.command input of the Env's device.
func (e *Env) envelope(pageID, id, typ string, payload any) map[string]any {
	return map[string]any{"id": id, "device_id": e.DeviceID, "page_id": pageID, "type": typ, "payload": payload}
}

func (p *page) record(seq int64, id, typ string, payload any) {
	c := kbcore.Command{ID: id, Type: typ, Payload: rawJSON(payload)}
	p.cmds[seq] = c
	if res := kbcore.Apply(p.doc, c); res.Rejected == nil {
		p.doc = res.Doc
	}
	p.seq = seq
}

// newPage creates a page (create-page, seq 1) with a unique title.
func (e *Env) newPage(ctx context.Context) (*page, error) {
	p, err := e.createPage(ctx)
	return p, e.setupFailed(setupPage, err)
}

// createPage is newPage without the skip of setup.go.
func (e *Env) createPage(ctx context.Context) (*page, error) {
	id := newID()
	d, _ := kbcore.NewDoc(kbcore.Page{ID: id}, nil)
	p := &page{id: id, title: "protocol check " + id, doc: d, cmds: map[int64]kbcore.Command{}}
	cid := newID()
	payload := map[string]any{"title": p.title}
	r, err := e.mutate(ctx, "kb.command", e.envelope(id, cid, "create-page", payload))
	if err != nil {
		return nil, step("create-page", err)
	}
	seq, _, err := seqOf(r)
	if err != nil {
		return nil, step("create-page of a new page", err)
	}
	if seq != 1 {
		return nil, step("create-page of a new page", r.fail(1, seq, "the first command of a page has seq 1"))
	}
	p.record(1, cid, "create-page", payload)
	return p, nil
}

// nodePayload is the payload of a create-after appending node k (n1, n2,
// ...) at the end of the page's top level.
func (p *page) nodePayload(k int) map[string]any {
	pl := map[string]any{"node": fmt.Sprintf("n%d", k), "text": fmt.Sprintf("node %d", k)}
	if k > 1 {
		pl["after"] = fmt.Sprintf("n%d", k-1)
	}
	return pl
}

// commit posts a command that must commit as the page's next seq.
func (e *Env) commit(ctx context.Context, p *page, typ string, payload any) (string, error) {
	id := newID()
	r, err := e.mutate(ctx, "kb.command", e.envelope(p.id, id, typ, payload))
	if err != nil {
		return "", err
	}
	seq, dup, err := seqOf(r)
	if err != nil {
		return "", step(typ, err)
	}
	if seq != p.seq+1 || dup {
		return "", step(typ, r.fail(fmt.Sprintf(`{"seq":%d}`, p.seq+1), excerpt(r.Body, 200),
			"a new command of a page with seq %d (no other writer) commits as seq %d", p.seq, p.seq+1))
	}
	p.record(seq, id, typ, payload)
	return id, nil
}

// addNodes appends n nodes to the page, one command each.
func (e *Env) addNodes(ctx context.Context, p *page, n int) error {
	for i := 0; i < n; i++ {
		p.nodes++
		if _, err := e.commit(ctx, p, "create-after", p.nodePayload(p.nodes)); err != nil {
			return step(fmt.Sprintf("setup: create-after n%d", p.nodes), err)
		}
	}
	return nil
}

// snap is a kb.page answer.
type snap struct {
	r        *Response
	doc      json.RawMessage
	seq      int64
	outcomes map[string]json.RawMessage
}

// isDoc checks that the answer's doc is want, the canonical encoding of
// the fold of the page's commands: first as JSON (the fold, by cite), then
// byte for byte (the canonical form, spec/README.md 1).
func (s *snap) isDoc(want []byte, cite string) error {
	var got bytes.Buffer
	if err := json.Compact(&got, s.doc); err != nil {
		return s.r.fail("a JSON document", excerpt(s.doc, 200), "kb.page's doc")
	}
	if !sameJSON(got.Bytes(), want) {
		return s.r.fail(string(want), got.String(), "kb.page's doc is the fold of the page's commands (%s)", cite)
	}
	if !bytes.Equal(s.doc, want) {
		return s.r.fail(string(want), string(s.doc), "kb.page's doc is the fold's canonical JSON byte for byte (spec/README.md 1): %s", kbcore.CanonicalMismatch(s.doc, want))
	}
	return nil
}

// snapshot gets kb.page and checks its shape {doc, seq, outcomes}.
func (e *Env) snapshot(ctx context.Context, pageID string, pending []string) (*snap, error) {
	in := map[string]any{"page_id": pageID}
	if pending != nil {
		in["pending"] = pending
	}
	r, err := e.query(ctx, "kb.page", in)
	if err != nil {
		return nil, err
	}
	data, err := expectSuccess(r)
	if err != nil {
		return nil, step("kb.page", err)
	}
	return pageData(r, data)
}

// pageAt checks that kb.page of pageID answers seq want; what is the
// failure's message.
func (e *Env) pageAt(ctx context.Context, pageID string, want int64, what string) error {
	s, err := e.snapshot(ctx, pageID, nil)
	if err != nil {
		return err
	}
	if s.seq != want {
		return s.r.fail(fmt.Sprintf("seq %d", want), fmt.Sprintf("seq %d", s.seq), "%s", what)
	}
	return nil
}

func pageData(r *Response, data json.RawMessage) (*snap, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil || raw == nil {
		return nil, r.fail("{doc, seq, outcomes}", excerpt(data, 200), "kb.page's output is an object")
	}
	s := &snap{r: r, doc: raw["doc"]}
	for _, k := range []string{"doc", "seq", "outcomes"} {
		if _, ok := raw[k]; !ok {
			return nil, r.fail("{doc, seq, outcomes}", excerpt(data, 300), "kb.page's output lacks %q", k)
		}
	}
	if err := json.Unmarshal(raw["seq"], &s.seq); err != nil {
		return nil, r.fail("seq: a number", string(raw["seq"]), "kb.page's seq is not a number")
	}
	if err := json.Unmarshal(raw["outcomes"], &s.outcomes); err != nil || s.outcomes == nil {
		return nil, r.fail("outcomes: an object", excerpt(raw["outcomes"], 200), "kb.page's outcomes is not an object")
	}
	return s, nil
}

// unchanged checks that nothing was written to the page: kb.page still
// has the page's seq, and none of ids has an outcome.
func (e *Env) unchanged(ctx context.Context, p *page, ids ...string) error {
	s, err := e.snapshot(ctx, p.id, append([]string{}, ids...))
	if err != nil {
		return step("nothing written? kb.page", err)
	}
	if s.seq != p.seq {
		return step("nothing written?", s.r.fail(fmt.Sprintf("seq %d", p.seq), fmt.Sprintf("seq %d", s.seq),
			"a refused request wrote to the page (PROTOCOL.md 7: nothing is written)"))
	}
	for _, id := range ids {
		if o, ok := s.outcomes[id]; ok {
			return step("nothing written?", s.r.fail("no outcome for "+id, string(o),
				"a refused command has an outcome: it was logged (PROTOCOL.md 7)"))
		}
	}
	return nil
}

// absent checks that a page does not exist (kb.page is NOT_FOUND).
func (e *Env) absent(ctx context.Context, pageID string) error {
	r, err := e.query(ctx, "kb.page", map[string]any{"page_id": pageID})
	if err != nil {
		return err
	}
	if r.Status == http.StatusOK {
		return step("nothing written?", r.fail("NOT_FOUND (the page was never created)", "HTTP 200",
			"a refused create-page created the page (PROTOCOL.md 7: nothing is written)"))
	}
	_, err = expectError(r, "NOT_FOUND", "kb.page")
	return step("kb.page of a page never created", err)
}
