package sim

import (
	"fmt"
	"sort"

	"github.com/subspace/kbkit/kbcore"
)

// ---- command generation ----

// byteRuleText are pieces of text that meet every escaping rule of
// canonical JSON (RFC 8785, spec/canonical.json): the simulator's
// byte-level projection check compares kb.page's bytes with them in.
var byteRuleText = []string{"<", ">", "&", "<b>&amp;</b>", `"`, `\`, "/", "\u2028", "\u2029", "\t", "\n", "\x01", "\x1f", "\x7f",
	"😀", "\U0001F469\u200d\U0001F4BB", "e\u0301", "\u05e9\u05dc\u05d5\u05dd", "\u202eRTL\u202c", "\ufeff"}

// piece is the next piece of typed text: mostly a letter, a quarter of
// the time a byte-rule piece.
func (s *sim) piece() string {
	if s.rng.IntN(4) == 0 {
		return byteRuleText[s.rng.IntN(len(byteRuleText))]
	}
	return string(rune('a' + s.rng.IntN(26)))
}

func (s *sim) drawCommand(w *win) kbcore.Command { return s.drawOn(w.w.Rendered()) }

// drawOn draws a command a user makes on what d shows.
func (s *sim) drawOn(d kbcore.Doc) kbcore.Command {
	// Document order, not id order: ids carry a per-run nonce, and the
	// choices must not depend on it for a seed to replay exactly.
	var nodes []kbcore.Node
	d.Walk(func(n kbcore.Node) bool { nodes = append(nodes, n); return true })
	pick := func() string {
		if len(nodes) == 0 || s.rng.OneIn(12) {
			return "ghost-" + fmt.Sprint(s.rng.IntN(3))
		}
		// Bias to the first nodes so that windows race on the same ones.
		i := s.rng.IntN(len(nodes))
		if s.rng.IntN(2) == 0 {
			i = s.rng.IntN(min(3, len(nodes)))
		}
		return nodes[i].ID
	}
	id := s.newID()
	var typ string
	var p map[string]any
	var tables, codes []string
	for _, n := range nodes {
		switch n.Kind {
		case "table":
			tables = append(tables, n.ID)
		case "code":
			codes = append(codes, n.ID)
		}
	}
	switch r := s.rng.IntN(100); {
	case r < 12 && (len(tables) > 0 || len(codes) > 0):
		// Table cells and code outputs: values a server must store as
		// sent, formulas included.
		if len(codes) == 0 || (len(tables) > 0 && s.rng.IntN(2) == 0) {
			cell := fmt.Sprintf("%c%d", 'A'+rune(s.rng.IntN(3)), 1+s.rng.IntN(3))
			value := [...]string{fmt.Sprint(s.rng.IntN(100)), "=A1+1", "=SUM(A1:B2)", "", "x [[" + s.titles[s.rng.IntN(len(s.titles))] + "]]", "a" + s.piece()}[s.rng.IntN(6)]
			typ, p = kbcore.TypeSetCell, map[string]any{"node": tables[s.rng.IntN(len(tables))], "cell": cell, "value": value}
		} else {
			outs := []map[string]string{}
			for k := s.rng.IntN(3); k > 0; k-- {
				outs = append(outs, map[string]string{"mime": "text/plain", "data": fmt.Sprintf("out %d %s", s.idSeq, s.piece())})
			}
			typ, p = kbcore.TypeSetOutputs, map[string]any{"node": codes[s.rng.IntN(len(codes))], "outputs": outs}
		}
	case r < 40:
		n := pick()
		text := "x"
		if node, ok := d.Node(n); ok {
			text = node.Text + s.piece()
			if s.rng.OneIn(15) {
				text += " see [[" + s.titles[s.rng.IntN(len(s.titles))] + "]]"
			}
		}
		typ, p = kbcore.TypeEditText, map[string]any{"node": n, "text": text}
	case r < 62:
		p = map[string]any{"text": fmt.Sprintf("n%d %s", s.idSeq, s.piece())}
		if len(nodes) > 0 && s.rng.IntN(3) > 0 {
			p["after"] = pick()
		} else if len(nodes) > 0 && s.rng.IntN(2) == 0 {
			p["parent"] = pick()
		}
		switch s.rng.IntN(6) {
		case 0:
			p["kind"] = "table"
		case 1:
			p["kind"] = "code"
		}
		typ = kbcore.TypeCreateAfter
	case r < 72:
		var parent, after any
		if s.rng.IntN(2) == 0 && len(nodes) > 0 {
			parent = pick()
		}
		pid, _ := parent.(string)
		if kids := d.Children(pid); len(kids) > 0 && s.rng.IntN(3) > 0 {
			after = kids[s.rng.IntN(len(kids))].ID
		}
		typ, p = kbcore.TypeMoveNode, map[string]any{"node": pick(), "parent": parent, "after": after}
	case r < 81:
		typ, p = kbcore.TypeIndent, map[string]any{"node": pick()}
	case r < 88:
		typ, p = kbcore.TypeOutdent, map[string]any{"node": pick()}
	default:
		typ, p = kbcore.TypeDelete, map[string]any{"node": pick()}
	}
	return kbcore.Command{ID: id, Type: typ, Payload: mustJSON(p)}
}

// sortedOps returns the history in first-send order.
func (s *sim) sortedOps() []*op {
	out := make([]*op, 0, len(s.opOrder))
	for _, id := range s.opOrder {
		out = append(out, s.ops[id])
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].call < out[j].call })
	return out
}
