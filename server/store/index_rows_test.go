package store

import (
	"context"
	"fmt"
	"math/rand"
	"testing"

	"github.com/google/uuid"

	"github.com/subspace/kbkit/kbcore"
)

// TestIndexRowsFollowEveryTransition: a node's index rows (links, labels,
// deps) are deleted only for the nodes whose state before the transaction
// had some (pageWrites.hadIndexRows); this drives text and table nodes
// through every transition (none to some, some to none, some to other,
// deleted, created again) on two pages, alone and in groups of concurrent
// writers (where one group may add and then remove a node's rows), and
// after each round compares every page's rows with its projection's
// index (checkIndex). With the index delete skipped for every node, the
// first round that takes rows away fails.
func TestIndexRowsFollowEveryTransition(t *testing.T) {
	st, dev, pageA := setup(t)
	pageB := uuid.NewString()
	mustSubmit(t, st, dev, env(pageB, "create-page", map[string]any{"title": "Taxes"}))
	pages := []string{pageA, pageB}
	texts := []string{
		"plain words",
		"see [[Budget]] and #tag",
		"cash: 610",
		"total: 5\nsee [[Taxes]] and [[Nowhere]]",
		"",
	}
	cells := []string{"10", "=A1*2", "=[[Budget]]:cash", "", "=B1+A1"}
	ctx := context.Background()
	for _, p := range pages {
		for _, n := range []string{"t1", "t2", "t3"} {
			mustSubmit(t, st, dev, env(p, "create-after", map[string]any{"node": n, "text": "see [[Budget]]"}))
		}
		mustSubmit(t, st, dev, env(p, "create-after", map[string]any{"node": "tb", "kind": "table", "text": "T"}))
	}
	rng := rand.New(rand.NewSource(1))
	// step is one command on page p: an edit, a cell, a delete or a
	// re-creation of one of its nodes.
	step := func(p string) kbcore.Envelope {
		switch k := rng.Intn(10); {
		case k < 5:
			return env(p, "edit-text", map[string]any{"node": fmt.Sprintf("t%d", 1+rng.Intn(3)), "text": texts[rng.Intn(len(texts))]})
		case k < 8:
			return env(p, "set-cell", map[string]any{"node": "tb", "cell": []string{"A1", "B1", "C1"}[rng.Intn(3)], "value": cells[rng.Intn(len(cells))]})
		case k < 9:
			return env(p, "delete", map[string]any{"node": fmt.Sprintf("t%d", 1+rng.Intn(3))})
		default: // again, once deleted
			return env(p, "create-after", map[string]any{"node": fmt.Sprintf("t%d", 1+rng.Intn(3)), "text": texts[rng.Intn(len(texts))]})
		}
	}
	committed := 0
	for round := 0; round < 30; round++ {
		var envs []kbcore.Envelope
		for i := 0; i < 1+rng.Intn(8); i++ {
			envs = append(envs, step(pages[rng.Intn(2)]))
		}
		var outs []Outcome
		if round%3 == 0 {
			for _, e := range envs { // alone, one after another
				outs = append(outs, mustSubmit(t, st, dev, e))
			}
		} else { // at once: groups of both pages
			outs = submitAtOnce(t, st, dev, envs)
		}
		for _, o := range outs {
			if o.Rejected == nil {
				committed++
			}
		}
		for _, p := range pages {
			checkIndex(t, st, p)
		}
	}
	var rows int
	if err := st.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM links) + (SELECT count(*) FROM labels) + (SELECT count(*) FROM deps)`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	// The run must have exercised the delete: rows came and went.
	if committed < 60 || rows == 0 {
		t.Fatalf("%d commands committed, %d index rows at the end: the run did not drive the index", committed, rows)
	}
}
