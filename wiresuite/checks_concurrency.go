package wiresuite

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
)

// ---- exactly-once and order under concurrency ----

func checkGaplessConcurrent(ctx context.Context, e *Env) error {
	p, err := e.setupPage(ctx, 0)
	if err != nil {
		return err
	}
	const posters, each = 4, 10
	type sent struct {
		seq     int64
		id      string
		payload map[string]any
	}
	var mu sync.Mutex
	var all []sent
	errs := make(chan error, posters)
	var wg sync.WaitGroup
	for g := 0; g < posters; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				id := newID()
				pl := map[string]any{"node": fmt.Sprintf("w%d-%d", g, i), "text": fmt.Sprintf("poster %d command %d", g, i)}
				r, err := e.mutate(ctx, "kb.command", e.envelope(p.id, id, "create-after", pl))
				if err != nil {
					errs <- err
					return
				}
				seq, dup, err := seqOf(r)
				if err != nil {
					errs <- step(fmt.Sprintf("poster %d command %d", g, i), err)
					return
				}
				if dup {
					errs <- r.fail("a new seq", "duplicate", "a new id answered as a duplicate")
					return
				}
				mu.Lock()
				all = append(all, sent{seq, id, pl})
				mu.Unlock()
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	sort.Slice(all, func(i, j int) bool { return all[i].seq < all[j].seq })
	var got []string
	ok := len(all) == posters*each
	for i, s := range all {
		got = append(got, fmt.Sprint(s.seq))
		if s.seq != int64(i+2) {
			ok = false
		}
	}
	if !ok {
		return failf("%d concurrent posters x %d commands: the seqs are 2..%d, each once (gapless, PROTOCOL.md 4.1, 11) (expected 2..%d, got %s)",
			posters, each, posters*each+1, posters*each+1, strings.Join(got, " "))
	}
	for _, s := range all {
		p.record(s.seq, s.id, "create-after", s.payload)
	}
	if err := e.pageAt(ctx, p.id, p.seq, "kb.page after the concurrent commands"); err != nil {
		return err
	}
	w, err := e.subscribedTo(ctx, 1, p, nil)
	if err != nil {
		return err
	}
	defer w.Close()
	if err := step("the subscription replays every seq once, in order, with the command committed at it", w.events(ctx, 1, p, 1, p.seq)); err != nil {
		return err
	}
	return w.quiet(ctx, "nothing after the last seq")
}

// ---- workspaces ----

func checkCrossWorkspace(ctx context.Context, e *Env) error {
	if e.OtherToken == "" {
		return Skipf("needs --other-token (a device of another workspace)")
	}
	p, err := e.setupPage(ctx, 1)
	if err != nil {
		return err
	}
	other := func(rq request) request { rq.token = e.OtherToken; return rq }
	missing := newID()
	pageBody := func(pid string) (*Response, error) {
		return e.send(ctx, other(request{method: http.MethodGet, path: "/trpc/kb.page",
			rawQuery: "input=" + encodeURIComponent(show(map[string]any{"page_id": pid, "pending": []string{p.cmds[2].ID}}))}))
	}
	r, err := pageBody(p.id)
	if err != nil {
		return err
	}
	if _, err := expectError(r, "NOT_FOUND", "kb.page"); err != nil {
		return step("kb.page of another workspace's page", err)
	}
	r2, err := pageBody(missing)
	if err != nil {
		return err
	}
	norm := func(b []byte, pid string) string { return strings.ReplaceAll(string(b), pid, "<page>") }
	if norm(r.Body, p.id) != norm(r2.Body, missing) {
		return r.fail(norm(r2.Body, missing), norm(r.Body, p.id),
			"another workspace's page is answered exactly like a page that does not exist (PROTOCOL.md 2)")
	}
	otherEnv := func(pid, typ string, payload any) []byte {
		return rawJSON(map[string]any{"id": newID(), "device_id": e.OtherDeviceID, "page_id": pid, "type": typ, "payload": payload})
	}
	if err := e.refused(ctx, p, other(request{body: otherEnv(p.id, "edit-text", map[string]any{"node": "n1", "text": "intruder"})}),
		"NOT_FOUND", "kb.command", "", "edit-text on another workspace's page"); err != nil {
		return err
	}
	if err := e.refused(ctx, p, other(request{body: otherEnv(p.id, "create-page", map[string]any{"title": "intruder " + p.id})}),
		"NOT_FOUND", "kb.command", "", "create-page on another workspace's page id"); err != nil {
		return err
	}
	w, r3, err := e.dialWS(ctx, wsHeader, e.OtherToken)
	if err != nil {
		if r3 != nil {
			return r3.fail("101", fmt.Sprintf("HTTP %d", r3.Status), "the other device's WebSocket upgrade")
		}
		return err
	}
	defer w.Close()
	if err := w.sendJSON(ctx, map[string]any{"id": 1, "method": "subscription",
		"params": map[string]any{"path": "kb.onPage", "input": map[string]any{"page_id": p.id}}}); err != nil {
		return err
	}
	m, err := w.reply(ctx, 1, "the answer to kb.onPage of another workspace's page")
	if err != nil {
		return err
	}
	if _, err := w.wsError(m, "NOT_FOUND", "kb.onPage", "kb.onPage of another workspace's page"); err != nil {
		return err
	}
	return e.unchanged(ctx, p)
}
