package timeline

import (
	"fmt"
	"sort"
	"strings"

	"github.com/subspace/kbkit/kbcore"
)

// Outline renders a document as lines, for the side-by-side view and its
// diff: the page record, then every node in document order, indented by
// depth, with its kind, cells or outputs, and its short id (two nodes of
// the same text are told apart).
func Outline(d kbcore.Doc) []string {
	p := d.Page()
	head := fmt.Sprintf("page %q", p.Title)
	if len(p.Aliases) > 0 {
		head += fmt.Sprintf(" aliases %q", p.Aliases)
	}
	if p.MergedInto != "" {
		head += " merged into " + short(p.MergedInto)
	}
	out := []string{head}
	depth := map[string]int{"": -1}
	d.Walk(func(n kbcore.Node) bool {
		dp := depth[n.Parent] + 1
		depth[n.ID] = dp
		line := strings.Repeat("  ", dp) + "• " + n.Text
		if n.Kind != "" && n.Kind != "text" {
			line += " [" + n.Kind + "]"
		}
		if len(n.Cells) > 0 {
			keys := make([]string, 0, len(n.Cells))
			for k := range n.Cells {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var cells []string
			for _, k := range keys {
				cells = append(cells, fmt.Sprintf("%s=%q", k, n.Cells[k]))
			}
			line += " {" + strings.Join(cells, " ") + "}"
		}
		for _, o := range n.Outputs {
			line += fmt.Sprintf(" <%s %q>", o.Mime, o.Data)
		}
		out = append(out, line+"  ·"+short(n.ID))
		return true
	})
	return out
}
