package workload

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

	"github.com/subspace/kbkit/internal/jsonscan"
	"github.com/subspace/kbkit/kbcore"
)

// Op is one kind of user operation.
type Op string

// Operations.
const (
	Edit    Op = "edit"    // one keystroke: edit-text with one more character
	Create  Op = "create"  // create-after (Enter)
	Move    Op = "move"    // move-node
	Indent  Op = "indent"  // indent (Tab)
	Outdent Op = "outdent" // outdent (Shift-Tab)
	Delete  Op = "delete"  // delete a node
	Rename  Op = "rename"  // rename-page (derived rewrites on linking pages)
)

// Ops lists the operations in mix order.
var Ops = []Op{Edit, Create, Move, Indent, Outdent, Delete, Rename}

// Spec is a workload: a mix of operations and the shape of the pages.
type Spec struct {
	Name string
	// Mix weighs the operations.
	Mix map[Op]int
	// Pages is the number of pages (0: editors ÷ windows per page,
	// rounded up, so that every editor has a window).
	Pages int
	// WindowsPerPage is how many editors open each page (0: every editor
	// opens every page).
	WindowsPerPage int
	// Nodes is the number of nodes each page starts with.
	Nodes int
	// Burst is the number of keystrokes an editor types in one node
	// before it moves to another.
	Burst int
	// LinkEvery: one edit in LinkEvery adds a [[link]] to another page of
	// the run (0: never).
	LinkEvery int
}

var named = map[string]Spec{
	"typing": {Name: "typing", Mix: map[Op]int{Edit: 96, Create: 4},
		WindowsPerPage: 2, Nodes: 5, Burst: 12},
	"outline": {Name: "outline", Mix: map[Op]int{Create: 30, Move: 20, Indent: 20, Outdent: 15, Delete: 15},
		WindowsPerPage: 2, Nodes: 12, Burst: 1},
	"hot-page": {Name: "hot-page", Mix: map[Op]int{Edit: 85, Create: 6, Move: 3, Indent: 2, Outdent: 2, Delete: 2},
		Pages: 1, WindowsPerPage: 0, Nodes: 20, Burst: 8},
	"many-pages": {Name: "many-pages", Mix: map[Op]int{Edit: 85, Create: 6, Move: 3, Indent: 2, Outdent: 2, Delete: 2},
		Pages: 100, WindowsPerPage: 2, Nodes: 5, Burst: 8},
	"rename-storm": {Name: "rename-storm", Mix: map[Op]int{Rename: 25, Edit: 75},
		WindowsPerPage: 2, Nodes: 4, Burst: 4, LinkEvery: 3},
}

// Names lists the named workloads.
func Names() []string {
	var out []string
	for n := range named {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Named returns a named workload.
func Named(name string) (Spec, error) {
	s, ok := named[name]
	if !ok {
		return Spec{}, fmt.Errorf("workload: unknown workload %q (one of %s)", name, strings.Join(Names(), ", "))
	}
	mix := map[Op]int{}
	for k, v := range s.Mix {
		mix[k] = v
	}
	s.Mix = mix
	return s, nil
}

// SetMix overrides weights: "edit=80,create=10,delete=0".
func (s *Spec) SetMix(mix string) error {
	for _, part := range strings.Split(mix, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		w, err := strconv.Atoi(strings.TrimSpace(v))
		if !ok || err != nil || w < 0 {
			return fmt.Errorf("workload: mix %q: want OP=WEIGHT (a non-negative integer)", part)
		}
		op := Op(strings.TrimSpace(k))
		known := false
		for _, o := range Ops {
			known = known || o == op
		}
		if !known {
			return fmt.Errorf("workload: mix %q: unknown operation %q (edit, create, move, indent, outdent, delete, rename)", part, op)
		}
		s.Mix[op] = w
	}
	total := 0
	for _, w := range s.Mix {
		total += w
	}
	if total == 0 {
		return fmt.Errorf("workload: mix %q leaves no operation", mix)
	}
	return nil
}

// MixString is the mix as SetMix reads it.
func (s Spec) MixString() string {
	var parts []string
	for _, o := range Ops {
		if w := s.Mix[o]; w > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", o, w))
		}
	}
	return strings.Join(parts, ",")
}

// Layout returns the number of pages and of windows per page for a run of
// editors.
func (s Spec) Layout(editors int) (pages, perPage int) {
	perPage = s.WindowsPerPage
	if perPage <= 0 || perPage > editors {
		perPage = editors
	}
	pages = s.Pages
	if pages <= 0 {
		pages = max(1, (editors+perPage-1)/perPage)
	}
	return pages, perPage
}

// Cursor is an editor's typing state in one window.
type Cursor struct {
	Node string // the node being typed in
	Left int    // keystrokes left in the burst
}

// Context is what the generator may look at besides its random source.
type Context struct {
	// Doc is the page as the window renders it.
	Doc kbcore.Doc
	// ID is the id of the command to draw (and of a node it creates).
	ID string
	// Titles are the current titles of the run's pages, for links.
	Titles []string
	// Title is a fresh title for a rename, unique in the run.
	Title string
}

const prose = "the quick brown fox jumps over the lazy dog while the outline keeps growing "

// maxText bounds a node's text: past it the editor selects all and types
// anew, so payloads stay small.
const maxText = 96

// nodeAt is the k-th node in document order: cheaper than sorting every
// node of the page for each operation (d.Nodes), which a hot page felt.
func nodeAt(d kbcore.Doc, k int) kbcore.Node {
	n, _ := d.NodeAt(k)
	return n
}

// encode is json.Marshal of a payload (map[string]any of strings and
// nils): by hand, keys sorted as json.Marshal sorts them, when every
// string is one json.Marshal writes as itself, and by json.Marshal
// otherwise; the same bytes either way (workload_test.go checks).
func encode(p any) json.RawMessage {
	m, ok := p.(map[string]any)
	if !ok || len(m) > 4 {
		b, _ := json.Marshal(p)
		return b
	}
	var keys [4]string
	n := 0
	size := 2
	for k, v := range m {
		s, isString := v.(string)
		if (!isString && v != nil) || !jsonscan.PlainJSON(k) || (isString && !jsonscan.PlainJSON(s)) {
			b, _ := json.Marshal(p)
			return b
		}
		keys[n] = k
		n++
		size += len(k) + len(s) + 8
	}
	sort.Strings(keys[:n])
	b := make([]byte, 0, size)
	b = append(b, '{')
	for i, k := range keys[:n] {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(b, '"'), k...), '"', ':')
		if s, ok := m[k].(string); ok {
			b = append(append(append(b, '"'), s...), '"')
		} else {
			b = append(b, "null"...)
		}
	}
	return append(b, '}')
}

func (s Spec) draw(rng *rand.Rand) Op {
	total := 0
	for _, o := range Ops {
		total += s.Mix[o]
	}
	r := rng.IntN(total)
	for _, o := range Ops {
		if r < s.Mix[o] {
			return o
		}
		r -= s.Mix[o]
	}
	return Edit
}

// Next draws the next command of a window.
func (s Spec) Next(rng *rand.Rand, c Context, cur *Cursor) kbcore.Command {
	d := c.Doc
	nodes := d.Len()
	op := s.draw(rng)
	// Keep the page's size near its start: an empty page only grows, a
	// page past four times its start only shrinks.
	switch {
	case nodes == 0 && op != Rename:
		op = Create
	case op == Delete && nodes <= max(1, s.Nodes/2):
		op = Create
	case op == Create && nodes >= 4*max(s.Nodes, 4):
		op = Delete
	}
	pick := func() kbcore.Node { return nodeAt(d, rng.IntN(nodes)) }
	cmd := func(typ string, p any) kbcore.Command {
		return kbcore.Command{ID: c.ID, Type: typ, Payload: encode(p)}
	}
	switch op {
	case Edit:
		n, ok := d.Node(cur.Node)
		if !ok || cur.Left <= 0 {
			n = pick()
			cur.Node, cur.Left = n.ID, max(1, s.Burst/2+rng.IntN(s.Burst+1))
		}
		cur.Left--
		text := n.Text
		if len(text) >= maxText {
			text = ""
		}
		text += string(prose[len(text)%len(prose)])
		if s.LinkEvery > 0 && len(c.Titles) > 0 && rng.IntN(s.LinkEvery) == 0 && len(text)+40 < maxText {
			text += " [[" + c.Titles[rng.IntN(len(c.Titles))] + "]] "
		}
		return cmd(kbcore.TypeEditText, map[string]any{"node": n.ID, "text": text})
	case Create:
		p := map[string]any{"text": ""}
		switch r := rng.IntN(8); {
		case nodes == 0 || r == 0:
			// first child of the page
		case r == 1:
			p["parent"] = pick().ID
		default:
			p["after"] = pick().ID
		}
		// The editor goes on typing in the node it made.
		cur.Node, cur.Left = c.ID, max(1, s.Burst/2+rng.IntN(s.Burst+1))
		return cmd(kbcore.TypeCreateAfter, p)
	case Move:
		n := pick()
		var parent, after any
		if rng.IntN(3) == 0 {
			if q := pick(); q.ID != n.ID {
				parent = q.ID
			}
		}
		pid, _ := parent.(string)
		if kids := d.Children(pid); len(kids) > 0 && rng.IntN(4) > 0 {
			if k := kids[rng.IntN(len(kids))]; k.ID != n.ID {
				after = k.ID
			}
		}
		return cmd(kbcore.TypeMoveNode, map[string]any{"node": n.ID, "parent": parent, "after": after})
	case Indent:
		return cmd(kbcore.TypeIndent, map[string]any{"node": pick().ID})
	case Outdent:
		var nested []kbcore.Node
		d.Walk(func(n kbcore.Node) bool {
			if n.Parent != "" {
				nested = append(nested, n)
			}
			return true
		})
		n := pick()
		if len(nested) > 0 {
			n = nested[rng.IntN(len(nested))]
		}
		return cmd(kbcore.TypeOutdent, map[string]any{"node": n.ID})
	case Delete:
		n := pick()
		if n.ID == cur.Node {
			cur.Left = 0
		}
		return cmd(kbcore.TypeDelete, map[string]any{"node": n.ID})
	default: // Rename
		return cmd(kbcore.TypeRenamePage, map[string]any{"title": c.Title})
	}
}
