package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/kbcore/rank"
)

// gen draws the differential test's inputs: documents reached by applying
// drawn commands to drawn pages (so they are states the reducer makes),
// commands of every type with payloads right, wrong and absent, node text
// and formulas rich in the tokenizer's punctuation, window scripts and
// workspaces for the planner.
type gen struct{ r *rand.Rand }

var (
	textBits = []string{"[[", "]]", "#", "[[Budget]]", "#todo", "cash", ":", " ", "$5", "1,000", "-3.5e2", "\n",
		"((", "))", "{{embed [[X]]}}", "é", "日本", "\u00a0", "\t", "`", "a", "B", "x y", "[[a|b]]", "%", "€12", "\\", "\"", "<&>"}
	formulaBits = []string{"=", "A1", "+", "B2", "[[P]]", ":cash", "*", "(", ")", "SUM", "A1:B3", " ", "2", ".", "[[Q R]]:x", "-", "zz9"}
	titles      = []string{"Budget", "budget", "Forecast", "Q1 plan", "Alpha", "  spaced  ", "", "a/b", "Ünï", "x"}
)

func (g gen) pick(list []string) string { return list[g.r.IntN(len(list))] }

func (g gen) text(bits []string, max int) string {
	var b strings.Builder
	for n := g.r.IntN(max + 1); n > 0; n-- {
		b.WriteString(g.pick(bits))
	}
	return b.String()
}

// doc draws a page of up to max nodes, then applies a few drawn commands
// to it (the rejected ones change nothing).
func (g gen) doc(pageID, title string, max int) kbcore.Doc {
	n := g.r.IntN(max + 1)
	var nodes []kbcore.Node
	byParent := map[string][]int{}
	for i := 0; i < n; i++ {
		parent := ""
		if i > 0 && g.r.IntN(3) == 0 {
			parent = nodes[g.r.IntN(i)].ID
		}
		byParent[parent] = append(byParent[parent], i)
		nd := kbcore.Node{ID: fmt.Sprintf("n%d", i), Parent: parent, Kind: kbcore.KindText, Text: g.text(textBits, 5)}
		switch g.r.IntN(6) {
		case 0:
			nd.Kind, nd.Outputs = kbcore.KindCode, []kbcore.Output{{Mime: "text/plain", Data: g.text(textBits, 2)}}
		case 1:
			nd.Kind, nd.Text, nd.Cells = kbcore.KindTable, "", map[string]string{"A1": g.text(formulaBits, 4), "B2": "3"}
		}
		nodes = append(nodes, nd)
	}
	for _, kids := range byParent {
		ranks, _ := rank.NBetween("", "", len(kids))
		for k, i := range kids {
			nodes[i].Rank = ranks[k]
		}
	}
	d, err := kbcore.NewDoc(kbcore.Page{ID: pageID, Title: title}, nodes)
	if err != nil {
		panic(err) // the generator's own bug
	}
	for k := g.r.IntN(4); k > 0; k-- {
		if res := kbcore.Apply(d, g.command(d, fmt.Sprintf("w%d", k))); res.Rejected == nil {
			d = res.Doc
		}
	}
	return d
}

// nodeID is a node of d, a missing one, an invalid one or nothing.
func (g gen) nodeID(d kbcore.Doc) any {
	ns := d.Nodes()
	switch k := g.r.IntN(10); {
	case k < 7 && len(ns) > 0:
		return ns[g.r.IntN(len(ns))].ID
	case k == 7:
		return "missing"
	case k == 8:
		return g.pick([]string{"", "bad id!", "x\u0000"})
	default:
		return nil
	}
}

// command draws a command for d: mostly well formed, sometimes with a
// wrong field type, an unknown field, no payload or an unknown type. The
// types are the registry's (kbcore.Types); a type without a payload
// generator gets {} (TestPayloadPerType fails then).
func (g gen) command(d kbcore.Doc, id string) kbcore.Command {
	typ := g.pick(kbcore.Types)
	p := map[string]any{}
	node := g.nodeID(d)
	if fill := payloads[typ]; fill != nil {
		fill(g, d, typ, node, p)
	}
	var payload any = p
	switch g.r.IntN(25) {
	case 0:
		payload = nil
	case 1:
		payload = g.pick([]string{"x", "[]", "1"})
	case 2:
		p["extra"] = true
	case 3:
		typ = "bogus-type"
	case 4:
		for k := range p {
			p[k] = 7 // a wrong field type
			break
		}
	}
	b, _ := json.Marshal(payload)
	return kbcore.Command{ID: id, Type: typ, Payload: b}
}

// windowSteps draws a window script for d: local edits, their echoes in
// order or foreign ones, rejections, snapshots, undo and redo.
func (g gen) windowSteps(d kbcore.Doc, seq int64) []json.RawMessage {
	var steps []json.RawMessage
	var mine []kbcore.Command
	server := d
	add := func(v any) {
		b, _ := json.Marshal(v)
		steps = append(steps, b)
	}
	for k := g.r.IntN(9) + 1; k > 0; k-- {
		switch g.r.IntN(7) {
		case 0, 1:
			c := g.command(server, fmt.Sprintf("c%d", len(steps)))
			mine = append(mine, c)
			add(map[string]any{"local": c})
		case 2:
			c := g.command(server, fmt.Sprintf("f%d", len(steps)))
			if len(mine) > 0 && g.r.IntN(2) == 0 {
				c, mine = mine[0], mine[1:]
			}
			if res := kbcore.Apply(server, c); res.Rejected == nil {
				server = res.Doc
			}
			seq += int64(1 + g.r.IntN(2)*g.r.IntN(2)) // now and then a gap
			add(map[string]any{"echo": map[string]any{"seq": seq, "cmd": c}})
		case 3:
			id := "unknown"
			if len(mine) > 0 {
				id = mine[g.r.IntN(len(mine))].ID
			}
			add(map[string]any{"reject": map[string]any{"id": id, "code": g.pick([]string{"node-not-found", "conflict"})}})
		case 4:
			seq++
			out := map[string]any{}
			for _, c := range mine {
				if g.r.IntN(2) == 0 {
					out[c.ID] = map[string]any{"seq": seq}
				} else {
					out[c.ID] = map[string]any{"rejected": map[string]string{"code": "node-not-found", "message": "gone"}}
				}
			}
			mine = nil
			add(map[string]any{"snapshot": map[string]any{"doc": server, "seq": seq, "outcomes": out}})
		case 5:
			add(map[string]any{"undo": map[string]any{"ids": []string{fmt.Sprintf("u%d", len(steps))}}})
		default:
			add(map[string]any{"redo": map[string]any{"ids": []string{fmt.Sprintf("r%d", len(steps))}}})
		}
	}
	return steps
}

// payloads fills in a drawn payload of each command type of the registry
// (kbcore/registry.go), against document d. TestPayloadPerType holds its
// keys to the registry.
var payloads = map[string]func(g gen, d kbcore.Doc, typ string, node any, p map[string]any){
	"create-after": func(g gen, d kbcore.Doc, _ string, node any, p map[string]any) {
		p["node"], p["text"] = fmt.Sprintf("new%d", g.r.IntN(5)), g.text(textBits, 4)
		if g.r.IntN(2) == 0 {
			p["after"] = g.nodeID(d)
		}
		if g.r.IntN(3) == 0 {
			p["parent"] = g.nodeID(d)
		}
		if g.r.IntN(4) == 0 {
			p["kind"] = g.pick([]string{"text", "code", "table", "bogus"})
		}
		if g.r.IntN(4) == 0 {
			p["rank"] = g.pick([]string{"a0", "a5", "Zz", "", "!"})
		}
	},
	"edit-text": func(g gen, d kbcore.Doc, _ string, node any, p map[string]any) {
		p["node"], p["text"] = node, g.text(textBits, 6)
	},
	"move-node": func(g gen, d kbcore.Doc, _ string, node any, p map[string]any) {
		p["node"], p["parent"], p["after"] = node, g.nodeID(d), g.nodeID(d)
	},
	"indent":       nodeOnly,
	"outdent":      nodeOnly,
	"delete":       nodeOnly,
	"restore":      records,
	"restore-page": records,
	"set-outputs": func(g gen, d kbcore.Doc, _ string, node any, p map[string]any) {
		p["node"], p["outputs"] = node, []map[string]string{{"mime": "text/plain", "data": g.text(textBits, 2)}}
	},
	"set-cell": func(g gen, d kbcore.Doc, _ string, node any, p map[string]any) {
		p["node"], p["cell"], p["value"] = node, g.pick([]string{"A1", "B2", "C10", "a1", "", "ZZ99"}), g.text(formulaBits, 5)
	},
	"create-page": func(g gen, _ kbcore.Doc, _ string, node any, p map[string]any) {
		p["title"] = g.pick(titles)
	},
	"set-aliases": func(g gen, _ kbcore.Doc, _ string, node any, p map[string]any) {
		p["aliases"] = []string{g.pick(titles), g.pick(titles)}
	},
	"rename-page": func(g gen, _ kbcore.Doc, _ string, node any, p map[string]any) {
		p["title"] = g.pick(titles)
		if g.r.IntN(2) == 0 {
			p["aliases"] = []string{g.pick(titles)}
		}
	},
	"merge-page": func(g gen, _ kbcore.Doc, _ string, node any, p map[string]any) {
		p["into"] = g.pick([]string{"p1", "p2", "p3", "", "nope"})
	},
}

func nodeOnly(g gen, d kbcore.Doc, _ string, node any, p map[string]any) { p["node"] = node }

// records draws restore's and restore-page's node records: copies of some
// of d's nodes under new ids.
func records(g gen, d kbcore.Doc, typ string, node any, p map[string]any) {
	var recs []kbcore.Node
	for _, n := range d.Nodes() {
		if g.r.IntN(3) == 0 {
			n.ID += "r"
			recs = append(recs, n)
		}
	}
	p["nodes"] = recs
	if typ == "restore-page" {
		p["page"] = g.pick([]string{d.Page().ID, "other"})
	}
}
