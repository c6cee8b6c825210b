package kbcore_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/kbcore/token"
)

// ---- random workspaces for the planner ----

const planWS = "00000000-0000-0000-0000-0000000000aa"

// planTitles are the names pages may have and refs may use; some are
// NFC-equal ("Café" written composed and decomposed), some are not bare tags.
var planTitles = []string{"Alpha", "Beta", "Gamma", "Delta", "big idea", "Caf\u00e9", "Cafe\u0301", "x.y", "Omega"}

// planRef draws one fragment of node text: a ref of some spelling, code,
// an escape or plain text.
func planRef(t *rapid.T, label string) string {
	title := rapid.SampledFrom(planTitles).Draw(t, label+"-title")
	switch rapid.IntRange(0, 10).Draw(t, label+"-form") {
	case 0:
		return "((" + title + "))"
	case 1:
		return token.TagSpelling(title)
	case 2:
		return "#[[" + title + "]]"
	case 3:
		return "`[[" + title + "]]`"
	case 4:
		return "[[a [[" + title + "]] b]]"
	case 5:
		return "\\[[" + title + "]]"
	case 6:
		return "plain"
	case 7:
		return "[[ " + title + " ]]"
	default:
		return "[[" + title + "]]"
	}
}

func planText(t *rapid.T, label string) string {
	n := rapid.IntRange(0, 3).Draw(t, label+"-n")
	parts := make([]string, n)
	for i := range parts {
		parts[i] = planRef(t, fmt.Sprintf("%s-%d", label, i))
	}
	sep := rapid.SampledFrom([]string{" ", ", ", "\n"}).Draw(t, label+"-sep")
	return strings.Join(parts, sep)
}

func planApply(t *rapid.T, d kbcore.Doc, typ string, payload any) kbcore.Doc {
	b, _ := json.Marshal(payload)
	res := kbcore.Apply(d, kbcore.Command{ID: "setup", Type: typ, Payload: b})
	if res.Rejected != nil {
		t.Fatalf("setup %s %s on %s: %s", typ, b, d.Page().ID, res.Rejected.Message)
	}
	return res.Doc
}

// planWorkspace draws 2-4 pages whose live titles and aliases are distinct
// (after normalisation), with a few nodes referring to each other's titles
// and to unknown ones; sometimes a page is merged, sometimes a page has the
// implicit id of a title it no longer has.
func planWorkspace(t *rapid.T) []kbcore.Doc {
	n := rapid.IntRange(2, 4).Draw(t, "pages")
	ids := []string{"P", "Q", "R", "S"}[:n]
	if rapid.IntRange(0, 5).Draw(t, "implicit-id?") == 0 {
		ids[n-1] = kbcore.ImplicitPageID(planWS, rapid.SampledFrom(planTitles).Draw(t, "implicit-title"))
	}
	used := map[string]bool{}
	free := func(label string) (string, bool) {
		s := rapid.SampledFrom(planTitles).Draw(t, label)
		if used[kbcore.NormalizeTitle(s)] {
			return "", false
		}
		used[kbcore.NormalizeTitle(s)] = true
		return s, true
	}
	var docs []kbcore.Doc
	for i, id := range ids {
		d, err := kbcore.NewDoc(kbcore.Page{ID: id}, nil)
		if err != nil {
			t.Fatal(err)
		}
		title, ok := free(fmt.Sprintf("title-%d", i))
		if !ok {
			title = fmt.Sprintf("Page %d", i) // never a ref title
		}
		d = planApply(t, d, kbcore.TypeCreatePage, map[string]any{"title": title})
		if rapid.IntRange(0, 2).Draw(t, fmt.Sprintf("alias?-%d", i)) == 0 {
			if a, ok := free(fmt.Sprintf("alias-%d", i)); ok {
				d = planApply(t, d, kbcore.TypeSetAliases, map[string]any{"aliases": []string{a}})
			}
		}
		var nodes []string
		for j := rapid.IntRange(0, 4).Draw(t, fmt.Sprintf("nodes-%d", i)); j > 0; j-- {
			label := fmt.Sprintf("node-%d-%d", i, j)
			nid := strings.ToLower(id[:1]) + fmt.Sprint(j)
			if rapid.IntRange(0, 7).Draw(t, label+"-shared?") == 0 {
				nid = "x" // the same id on several pages: a merge collides
			}
			if d.Len() > 0 {
				if _, ok := d.Node(nid); ok {
					continue
				}
			}
			p := map[string]any{"node": nid, "text": planText(t, label)}
			if len(nodes) > 0 && rapid.Bool().Draw(t, label+"-child?") {
				p["parent"] = rapid.SampledFrom(nodes).Draw(t, label+"-parent")
			}
			kind := rapid.SampledFrom([]string{"text", "text", "text", "code", "table"}).Draw(t, label+"-kind")
			p["kind"] = kind
			d = planApply(t, d, kbcore.TypeCreateAfter, p)
			if kind == "table" {
				f := "=[[" + rapid.SampledFrom(planTitles).Draw(t, label+"-ftitle") + "]]:cash * 2"
				d = planApply(t, d, kbcore.TypeSetCell, map[string]any{"node": nid, "cell": "A1", "value": f})
			}
			nodes = append(nodes, nid)
		}
		docs = append(docs, d)
	}
	// Sometimes the last page was merged into the first.
	if rapid.IntRange(0, 4).Draw(t, "merged?") == 0 {
		docs[n-1] = planApply(t, docs[n-1], kbcore.TypeMergePage, map[string]any{"into": ids[0]})
	}
	return docs
}

// planOrigin draws an origin command for the workspace.
func planOrigin(t *rapid.T, docs []kbcore.Doc) kbcore.Envelope {
	var ids []string
	for _, d := range docs {
		ids = append(ids, d.Page().ID)
	}
	page := rapid.SampledFrom(append(ids, "Z")).Draw(t, "origin-page")
	var nodeIDs []string
	var tables []string
	for _, d := range docs {
		if d.Page().ID == page {
			for _, n := range d.Nodes() {
				nodeIDs = append(nodeIDs, n.ID)
				if n.Kind == kbcore.KindTable {
					tables = append(tables, n.ID)
				}
			}
		}
	}
	nodeOf := func(label string) string {
		if len(nodeIDs) == 0 {
			return "ghost"
		}
		return rapid.SampledFrom(nodeIDs).Draw(t, label)
	}
	title := func(label string) string {
		s := rapid.SampledFrom(append(append([]string{}, planTitles...), "New", "new title", "")).Draw(t, label)
		if rapid.IntRange(0, 4).Draw(t, label+"-pad?") == 0 {
			s = " " + s + " "
		}
		return s
	}
	typ := rapid.SampledFrom([]string{
		kbcore.TypeEditText, kbcore.TypeEditText, kbcore.TypeCreateAfter, kbcore.TypeSetCell,
		kbcore.TypeRenamePage, kbcore.TypeRenamePage, kbcore.TypeRenamePage,
		kbcore.TypeMergePage, kbcore.TypeMergePage, kbcore.TypeSetAliases, kbcore.TypeCreatePage,
	}).Draw(t, "origin-type")
	p := map[string]any{}
	switch typ {
	case kbcore.TypeEditText:
		p["node"], p["text"] = nodeOf("edit-node"), planText(t, "edit-text")
	case kbcore.TypeCreateAfter:
		p["node"], p["text"] = "new1", planText(t, "create-text")
		if len(nodeIDs) > 0 && rapid.Bool().Draw(t, "create-child?") {
			p["parent"] = nodeOf("create-parent")
		}
	case kbcore.TypeSetCell:
		node := "ghost"
		if len(tables) > 0 {
			node = rapid.SampledFrom(tables).Draw(t, "cell-node")
		}
		p["node"], p["cell"] = node, "B2"
		p["value"] = "=[[" + rapid.SampledFrom(planTitles).Draw(t, "cell-title") + "]]:cash"
	case kbcore.TypeRenamePage:
		p["title"] = title("rename-title")
		if rapid.IntRange(0, 3).Draw(t, "rename-aliases?") == 0 {
			p["aliases"] = []string{title("rename-alias")}
		}
	case kbcore.TypeMergePage:
		p["into"] = rapid.SampledFrom(append(ids, "Z")).Draw(t, "into")
	case kbcore.TypeSetAliases:
		p["aliases"] = rapid.SliceOfN(rapid.SampledFrom(planTitles), 0, 2).Draw(t, "aliases")
	case kbcore.TypeCreatePage:
		if rapid.Bool().Draw(t, "create-new-page?") {
			page = "N"
		}
		p["title"] = title("create-title")
	}
	b, _ := json.Marshal(p)
	return kbcore.Envelope{ID: "o1", DeviceID: "dev", PageID: page, Type: typ, Payload: b}
}

func planJSON(p kbcore.Plan) string {
	b, err := json.Marshal(p)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// textRefTitles lists the normalised titles of a node text's refs.
func textRefTitles(n kbcore.Node) []string {
	if n.Kind == kbcore.KindCode {
		return nil
	}
	var out []string
	for _, r := range token.Tokenize(n.Text).Refs {
		out = append(out, kbcore.NormalizeTitle(r.Title))
	}
	return out
}

var planCodes = map[string]bool{
	"page-not-found": true, "page-merged": true, "title-taken": true, "alias-taken": true,
	"node-not-found": true, "parent-not-found": true, "node-exists": true, "not-a-table": true,
	"page-exists": true, "title-empty": true, "merge-into-self": true, "already-merged": true,
	"invalid-payload": true,
}

func TestRapidPlanCommand(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		docs := planWorkspace(t)
		kb := kbcore.NewMemKB(docs...)
		env := planOrigin(t, docs)
		plan := kbcore.PlanCommand(kb, planWS, env)

		// Deterministic: the same input plans the same way.
		if again := kbcore.PlanCommand(kb, planWS, env); planJSON(plan) != planJSON(again) {
			t.Fatalf("two plans differ:\n%s\n%s", planJSON(plan), planJSON(again))
		}
		if plan.Rejected != nil {
			if !planCodes[plan.Rejected.Code] {
				t.Fatalf("unexpected rejection %s: %s", plan.Rejected.Code, plan.Rejected.Message)
			}
			if len(plan.Effects) != 0 || len(plan.Locks) != 0 || len(plan.Docs) != 0 {
				t.Fatalf("a rejected plan has effects, locks or docs: %s", planJSON(plan))
			}
			return
		}
		if len(plan.Effects) == 0 {
			t.Fatalf("an accepted plan without effects")
		}

		// The origin first, with its id and no cause; derived effects caused
		// by it, with their derived ids, all distinct.
		o := plan.Effects[0]
		if o.PageID != env.PageID || o.Cmd.ID != env.ID || o.Cmd.Type != env.Type || o.Cause != "" ||
			string(o.Cmd.Payload) != string(env.Payload) {
			t.Fatalf("first effect is not the origin: %+v", o)
		}
		seen := map[string]bool{env.ID: true}
		for i, e := range plan.Effects[1:] {
			if e.Cause != env.ID {
				t.Fatalf("derived effect %d has cause %q", i, e.Cause)
			}
			if want := kbcore.DerivedID(env.ID, e.PageID, i); e.Cmd.ID != want {
				t.Fatalf("derived effect %d on %s has id %s, want %s", i, e.PageID, e.Cmd.ID, want)
			}
			if seen[e.Cmd.ID] {
				t.Fatalf("derived id %s repeated", e.Cmd.ID)
			}
			seen[e.Cmd.ID] = true
			if e.Cmd.Type == kbcore.TypeCreatePage {
				var pl struct{ Title, Dir string }
				_ = json.Unmarshal(e.Cmd.Payload, &pl)
				if e.PageID != kbcore.ImplicitPageID(planWS, pl.Title) || pl.Dir != kbcore.ImplicitDir {
					t.Fatalf("implicit page %s: %s", e.PageID, e.Cmd.Payload)
				}
			}
		}

		// Locks: sorted, distinct, exactly the pages the effects touch.
		if !sort.StringsAreSorted(plan.Locks) {
			t.Fatalf("locks not sorted: %v", plan.Locks)
		}
		touched := map[string]bool{}
		for _, e := range plan.Effects {
			touched[e.PageID] = true
		}
		for i, id := range plan.Locks {
			if i > 0 && plan.Locks[i-1] == id {
				t.Fatalf("lock %s repeated", id)
			}
			if !touched[id] {
				t.Fatalf("lock %s: no effect touches it", id)
			}
		}
		if len(plan.Locks) != len(touched) {
			t.Fatalf("locks %v do not cover the effect pages %v", plan.Locks, touched)
		}

		// Every effect re-applies cleanly, in order, reproducing plan.Docs.
		cur := map[string]kbcore.Doc{}
		var originChanged []string
		for i, e := range plan.Effects {
			d, ok := cur[e.PageID]
			if !ok {
				if d, ok = kb.Doc(e.PageID); !ok {
					d, _ = kbcore.NewDoc(kbcore.Page{ID: e.PageID}, nil)
				}
			}
			res := kbcore.Apply(d, e.Cmd)
			if res.Rejected != nil {
				t.Fatalf("effect %d (%s on %s) rejected: %s", i, e.Cmd.Type, e.PageID, res.Rejected.Message)
			}
			if err := res.Doc.Check(); err != nil {
				t.Fatalf("effect %d: %v", i, err)
			}
			if i == 0 {
				originChanged = res.Changed
			}
			cur[e.PageID] = res.Doc
		}
		if len(cur) != len(plan.Docs) {
			t.Fatalf("plan.Docs has %d pages, the effects touch %d", len(plan.Docs), len(cur))
		}
		for id, d := range cur {
			if pd, ok := plan.Docs[id]; !ok || !pd.Equal(d) {
				t.Fatalf("page %s after the effects differs from plan.Docs", id)
			}
		}
		after := kb.With(plan.Docs)

		// Every ref of the nodes the origin changed resolves now, unless its
		// implicit page id was already taken.
		origin, _ := after.Doc(env.PageID)
		for _, id := range originChanged {
			n, ok := origin.Node(id)
			if !ok {
				continue
			}
			for _, r := range kbcore.IndexNode(n).Refs {
				title := kbcore.NormalizeTitle(r.Title)
				if _, ok := after.PageByTitle(title); ok {
					continue
				}
				if _, ok := after.PageByAlias(title); ok {
					continue
				}
				if _, ok := kb.Doc(kbcore.ImplicitPageID(planWS, title)); ok {
					continue
				}
				t.Fatalf("ref %q of node %s does not resolve after the plan", title, id)
			}
		}

		// After a rename or a merge, no live page has a ref written with the
		// old title (outside code: code spans and code nodes hold no refs).
		before, _ := kb.Doc(env.PageID)
		old := ""
		switch env.Type {
		case kbcore.TypeRenamePage:
			if origin.Page().Title != before.Page().Title {
				old = before.Page().Title
			}
		case kbcore.TypeMergePage:
			old = before.Page().Title
			if origin.Len() != 0 || origin.Page().MergedInto == "" {
				t.Fatalf("merged page %s keeps %d nodes, merged_into %q", env.PageID, origin.Len(), origin.Page().MergedInto)
			}
			target, _ := after.Doc(origin.Page().MergedInto)
			for _, n := range before.Nodes() {
				if _, ok := target.Node(n.ID); !ok {
					t.Fatalf("node %s did not move to %s", n.ID, target.Page().ID)
				}
			}
			if got := target.Page().Aliases; !containsStr(got, old) {
				t.Fatalf("target aliases %v lack the merged title %q", got, old)
			}
		}
		if old != "" {
			for _, id := range after.Pages() {
				d, _ := after.Doc(id)
				if p := d.Page(); !p.Born() || p.Merged() {
					continue
				}
				for _, n := range d.Nodes() {
					for _, title := range textRefTitles(n) {
						if title == old {
							t.Fatalf("page %s node %s still refers to %q: %q", id, n.ID, old, n.Text)
						}
					}
				}
			}
		}
	})
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestPlanSkipsUnwritableTitles: a link whose title has a control character
// (a tab) names no possible page; the edit is accepted and creates nothing.
func TestPlanSkipsUnwritableTitles(t *testing.T) {
	d, _ := kbcore.NewDoc(kbcore.Page{ID: "Q", Title: "Beta"}, []kbcore.Node{{ID: "n", Rank: "a0"}})
	plan := kbcore.PlanCommand(kbcore.NewMemKB(d), planWS, kbcore.Envelope{ID: "c1", PageID: "Q",
		Type: kbcore.TypeEditText, Payload: json.RawMessage(`{"node":"n","text":"[[a\tb]] [[Gamma]]"}`)})
	if plan.Rejected != nil {
		t.Fatalf("rejected: %+v", plan.Rejected)
	}
	if len(plan.Effects) != 2 || plan.Effects[1].PageID != kbcore.ImplicitPageID(planWS, "Gamma") {
		t.Fatalf("effects: %+v", plan.Effects)
	}
}
