package kbcore

import (
	"fmt"
	"sort"
	"strings"

	"github.com/subspace/kbkit/kbcore/rank"
	"github.com/subspace/kbkit/kbcore/token"
)

// Result is the outcome of applying one command to one page.
type Result struct {
	// Doc is the page after the command. When Rejected is set it is the
	// input document, unchanged.
	Doc Doc
	// Rejected is set when the command was not applied. The server logs the
	// command with no seq; a client drops it from pending and toasts.
	Rejected *Rejection
	// Inverse undoes the command: applied in order to Doc, they give back
	// the input document exactly. Their ids are empty: whoever issues them
	// (an undo) assigns ids. Empty for create-page and for rejections.
	Inverse []Command
	// Changed lists, sorted, the ids of nodes whose stored rows must be
	// written: upserted if present in Doc, deleted otherwise.
	Changed []string
	// PageChanged says the page record (title, aliases, dir, merged_into)
	// must be written.
	PageChanged bool
}

// Apply runs one command against one page. It is pure and total: any input
// gives a Result, the input document is never modified, and a rejection
// leaves the document unchanged.
func Apply(d Doc, c Command) Result {
	t := &tx{d: d.init(), inv: true}
	if rej := t.run(c); rej != nil {
		return Result{Doc: d, Rejected: rej}
	}
	// A command writes each node at most once (the laws tests hold Changed to
	// each id once), so sorting is all Changed needs.
	changed := t.changed
	sort.Strings(changed)
	return Result{Doc: t.d, Inverse: t.inverse, Changed: changed, PageChanged: t.pageChanged}
}

// applyLocal is Apply(d, c)'s document and rejection without the inverse
// (a window that keeps no undo history).
func applyLocal(d Doc, c Command) (Doc, *Rejection) {
	t := &tx{d: d.init()}
	if rej := t.run(c); rej != nil {
		return d, rej
	}
	return t.d, nil
}

// applyDoc is Apply(d, c).Doc without the rest of the result (no inverse
// is built): what a window folds with, echoes and pending commands.
func applyDoc(d Doc, c Command) Doc {
	t := &tx{d: d.init()}
	if t.run(c) != nil {
		return d
	}
	return t.d
}

// tx is one command being applied to a private copy of the persistent maps.
type tx struct {
	d Doc
	// inv: build the inverse (Apply does; applyDoc does not need it).
	inv         bool
	inverse     []Command
	changed     []string
	pageChanged bool
}

func reject(code, format string, args ...any) *Rejection {
	return &Rejection{Code: code, Message: fmt.Sprintf(format, args...)}
}

func (t *tx) run(c Command) *Rejection {
	if rej := Precheck(t.d, c.Type); rej != nil {
		return rej
	}
	return handlers[c.Type](t, c)
}

// Precheck makes the first three checks common to every command
// (spec/README.md 2.1: unknown-type, page-not-found, page-merged), which
// read only the type and the page; nil means the payload is checked next.
// A reader that cannot build a Command from what it was given (an id that
// is not a string) asks it before answering invalid-payload, so the order
// of the checks holds.
func Precheck(d Doc, typ string) *Rejection {
	if _, ok := handlers[typ]; !ok {
		return reject(CodeUnknownType, "unknown command type %q", typ)
	}
	p := d.page
	switch {
	case typ != TypeCreatePage && !p.Born():
		return reject(CodePageNotFound, "page %q does not exist yet", p.ID)
	case p.Merged() && typ != TypeMergePage && typ != TypeRestorePage:
		return reject(CodePageMerged, "page %q was merged into %q", p.ID, p.MergedInto)
	}
	return nil
}

// ---- helpers ----

// decodeAs is c's payload as a *T (the type's payload struct): the value
// the parser left in c.Parsed when it is a *T (shared, never written to),
// else a fresh one decoded from the bytes (decodeCommand).
func decodeAs[T any](c Command) (*T, *Rejection) {
	if p, ok := c.Parsed.Value.(*T); ok && p != nil {
		return p, nil
	}
	p := new(T)
	if len(c.Payload) == 0 {
		return p, reject(CodeInvalidPayload, "%s: payload is missing", c.Type)
	}
	if err := decodeCommand(c, p); err != nil {
		return p, reject(CodeInvalidPayload, "%s: %v", c.Type, err)
	}
	return p, nil
}

// decodeCommand decodes c's payload into v (a pointer to its payload
// struct): the fast decoder, else strictly.
func decodeCommand(c Command, v any) error {
	if decodeFast(c.Payload, v) {
		return nil
	}
	return decodeStrict(c.Payload, v)
}

func missing(c Command, field string) *Rejection {
	return reject(CodeInvalidPayload, "%s: payload.%s is required", c.Type, field)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// node looks up a node named by a payload field.
func (t *tx) node(c Command, field string, id *string) (*Node, *Rejection) {
	if id == nil {
		return nil, missing(c, field)
	}
	n, ok := t.d.get(*id)
	if !ok {
		return nil, reject(CodeNodeNotFound, "node %q not found", *id)
	}
	return n, nil
}

// replace stores a new version of a node in place (same parent and rank):
// the caller already holds the old version, so no lookup is repeated.
func (t *tx) replace(n *Node) {
	t.d.nodes = t.d.nodes.Set(n.ID, n)
	t.changed = append(t.changed, n.ID)
}

// insert adds a node known not to exist.
func (t *tx) insert(n *Node) {
	t.d.link(n)
	t.d.nodes = t.d.nodes.Set(n.ID, n)
	t.changed = append(t.changed, n.ID)
}

func (t *tx) remove(n *Node) {
	t.d.nodes = t.d.nodes.Delete(n.ID)
	t.d.unlink(n)
	t.changed = append(t.changed, n.ID)
}

// rankBetween mints the rank of a node placed between prev and next (nil =
// open end) under parent. A hint is kept when it is a valid key strictly
// between the neighbours' ranks.
func (t *tx) rankBetween(prev, next *Node, hint *string) (string, *Rejection) {
	lo, hi := "", ""
	if prev != nil {
		lo = prev.Rank
	}
	if next != nil {
		hi = next.Rank
	}
	if hint != nil && rank.Valid(*hint) && (lo == "" || lo < *hint) && (hi == "" || *hint < hi) {
		return *hint, nil
	}
	r, err := rank.Between(lo, hi)
	if err != nil {
		return "", reject(CodeRankExhausted, "no rank between %q and %q: %v", lo, hi, err)
	}
	return r, nil
}

func idOrNil(n *Node) *string {
	if n == nil {
		return nil
	}
	return ptr(n.ID)
}

func parentOrNil(parent string) *string {
	if parent == "" {
		return nil
	}
	return ptr(parent)
}

// moveBack is the inverse of any command that moved n from its current place.
func (t *tx) moveBack(n *Node) Command {
	prev, _ := t.d.prevSibling(n)
	return mkCommand(TypeMoveNode, MoveNode{Node: ptr(n.ID), Parent: nullable(parentOrNil(n.Parent)), After: nullable(idOrNil(prev)), Rank: ptr(n.Rank)})
}

func copyNode(n *Node) *Node {
	c := *n
	return &c
}

// ---- node commands ----

func (t *tx) createAfter(c Command) *Rejection {
	p, r := decodeAs[CreateAfter](c)
	if r != nil {
		return r
	}
	if p.Text == nil {
		return missing(c, "text")
	}
	kind := KindText
	if p.Kind != nil {
		kind = *p.Kind
	}
	if kind != KindText && kind != KindCode && kind != KindTable {
		return reject(CodeInvalidPayload, "create-after: unknown kind %q (text, code or table)", kind)
	}
	id := c.ID
	if p.Node != nil {
		id = *p.Node
	}
	if !ValidID(id) {
		return reject(CodeInvalidPayload, "create-after: node id %q is not 1-64 of [A-Za-z0-9_-]", id)
	}
	var parent string
	var prev, next *Node
	if p.After != nil {
		a, ok := t.d.get(*p.After)
		if !ok {
			return reject(CodeNodeNotFound, "after: node %q not found", *p.After)
		}
		parent, prev = a.Parent, a
		next, _ = t.d.nextSibling(a)
	} else {
		// Only null is the root: "" names no node (spec/README.md section 1).
		if p.Parent != nil {
			if _, ok := t.d.get(*p.Parent); !ok {
				return reject(CodeParentNotFound, "parent %q not found", *p.Parent)
			}
			parent = *p.Parent
		}
		next, _ = t.d.firstChild(parent)
	}
	if _, ok := t.d.get(id); ok {
		return reject(CodeNodeExists, "node %q already exists", id)
	}
	if p.After != nil && p.Parent != nil && (*p.Parent == "" || *p.Parent != parent) {
		return reject(CodeAnchorNotSibling, "after %q is not a child of parent %q", *p.After, *p.Parent)
	}
	rk, r := t.rankBetween(prev, next, p.Rank)
	if r != nil {
		return r
	}
	blank := normalizeNode(Node{Kind: kind})
	t.insert(&Node{ID: id, Parent: parent, Rank: rk, Kind: kind, Text: *p.Text, Outputs: blank.Outputs, Cells: blank.Cells})
	if t.inv {
		t.inverse = []Command{mkCommand(TypeDelete, NodeRef{Node: ptr(id)})}
	}
	return nil
}

func (t *tx) editText(c Command) *Rejection {
	p, r := decodeAs[EditText](c)
	if r != nil {
		return r
	}
	if p.Text == nil {
		return missing(c, "text")
	}
	n, r := t.node(c, "node", p.Node)
	if r != nil {
		return r
	}
	if t.inv {
		t.inverse = []Command{mkCommand(TypeEditText, EditText{Node: ptr(n.ID), Text: ptr(n.Text)})}
	}
	nn := copyNode(n)
	nn.Text = *p.Text
	t.replace(nn)
	return nil
}

func (t *tx) moveNode(c Command) *Rejection {
	p, r := decodeAs[MoveNode](c)
	if r != nil {
		return r
	}
	switch {
	case !p.Parent.Set:
		return missing(c, "parent")
	case !p.After.Set:
		return missing(c, "after")
	}
	n, r := t.node(c, "node", p.Node)
	if r != nil {
		return r
	}
	var parent string // null is the root; "" names no node
	if p.Parent.ID != nil {
		if _, ok := t.d.get(*p.Parent.ID); !ok {
			return reject(CodeParentNotFound, "parent %q not found", *p.Parent.ID)
		}
		parent = *p.Parent.ID
	}
	var after *Node
	if p.After.ID != nil {
		a, ok := t.d.get(*p.After.ID)
		if !ok {
			return reject(CodeNodeNotFound, "after: node %q not found", *p.After.ID)
		}
		if a.Parent != parent || a.ID == n.ID {
			return reject(CodeAnchorNotSibling, "after %q is not another child of parent %q", a.ID, parent)
		}
		after = a
	}
	if parent != "" && t.d.isAncestor(n.ID, parent) {
		return reject(CodeCycle, "cannot move %q under itself or its descendant %q", n.ID, parent)
	}
	if t.inv {
		t.inverse = []Command{t.moveBack(n)}
	}
	return t.place(n, parent, after, p.Rank)
}

// place moves n under parent right after `after` (nil = first child).
func (t *tx) place(n *Node, parent string, after *Node, hint *string) *Rejection {
	t.d.unlink(n)
	var next *Node
	if after != nil {
		next, _ = t.d.nextSibling(after)
	} else {
		next, _ = t.d.firstChild(parent)
	}
	rk, r := t.rankBetween(after, next, hint)
	if r != nil {
		return r
	}
	nn := copyNode(n)
	nn.Parent, nn.Rank = parent, rk
	t.d.link(nn)
	t.d.nodes = t.d.nodes.Set(nn.ID, nn)
	t.changed = append(t.changed, nn.ID)
	return nil
}

func (t *tx) indent(c Command) *Rejection {
	p, r := decodeAs[NodeRef](c)
	if r != nil {
		return r
	}
	n, r := t.node(c, "node", p.Node)
	if r != nil {
		return r
	}
	prev, ok := t.d.prevSibling(n)
	if !ok {
		return reject(CodeNoPrevSibling, "node %q has no previous sibling", n.ID)
	}
	if t.inv {
		t.inverse = []Command{t.moveBack(n)}
	}
	last, _ := t.d.lastChild(prev.ID)
	return t.place(n, prev.ID, last, nil)
}

func (t *tx) outdent(c Command) *Rejection {
	p, r := decodeAs[NodeRef](c)
	if r != nil {
		return r
	}
	n, r := t.node(c, "node", p.Node)
	if r != nil {
		return r
	}
	if n.Parent == "" {
		return reject(CodeAtRoot, "node %q is already at the page root", n.ID)
	}
	q, ok := t.d.get(n.Parent)
	if !ok { // impossible in a valid Doc; stay total anyway
		return reject(CodeParentNotFound, "parent %q not found", n.Parent)
	}
	if t.inv {
		t.inverse = []Command{t.moveBack(n)}
	}
	return t.place(n, q.Parent, q, nil)
}

func (t *tx) deleteNode(c Command) *Rejection {
	p, r := decodeAs[NodeRef](c)
	if r != nil {
		return r
	}
	n, r := t.node(c, "node", p.Node)
	if r != nil {
		return r
	}
	sub := t.d.subtree(n.ID)
	if t.inv {
		records := make([]Node, len(sub))
		for i, s := range sub {
			records[i] = *s
		}
		t.inverse = []Command{mkCommand(TypeRestore, Restore{Nodes: &records})}
	}
	for _, s := range sub {
		t.remove(s)
	}
	return nil
}

// insertRecords puts node records back, parents first. A record whose rank a
// sibling took meanwhile gets a fresh rank just after that sibling.
func (t *tx) insertRecords(c Command, records []Node) ([]string, *Rejection) {
	nodes := make([]Node, len(records))
	for i := range records {
		nodes[i] = normalizeNode(records[i])
		if err := checkNode(nodes[i]); err != nil {
			return nil, reject(CodeInvalidPayload, "%s: nodes[%d]: %v", c.Type, i, err)
		}
	}
	in := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		if _, ok := t.d.get(n.ID); ok || in[n.ID] {
			return nil, reject(CodeNodeExists, "node %q already exists", n.ID)
		}
		in[n.ID] = true
	}
	var roots []string
	for i := range nodes {
		n := &nodes[i]
		if n.Parent != "" {
			if _, ok := t.d.get(n.Parent); !ok {
				return nil, reject(CodeParentNotFound, "nodes[%d]: parent %q not found (records go parents first)", i, n.Parent)
			}
		}
		if !in[n.Parent] {
			roots = append(roots, n.ID)
		}
		if t.d.rankTaken(n.Parent, n.Rank) {
			rk, err := rank.Between(n.Rank, t.d.rankAbove(n.Parent, n.Rank))
			if err != nil {
				return nil, reject(CodeRankExhausted, "no rank after %q: %v", n.Rank, err)
			}
			n.Rank = rk
		}
		t.insert(n)
	}
	return roots, nil
}

func (t *tx) restore(c Command) *Rejection {
	p, r := decodeAs[Restore](c)
	if r != nil {
		return r
	}
	if p.Nodes == nil || len(*p.Nodes) == 0 {
		return reject(CodeInvalidPayload, "restore: payload.nodes must hold at least one record")
	}
	roots, r := t.insertRecords(c, *p.Nodes)
	if r != nil {
		return r
	}
	for _, id := range roots {
		t.inverse = append(t.inverse, mkCommand(TypeDelete, NodeRef{Node: ptr(id)}))
	}
	return nil
}

func (t *tx) setOutputs(c Command) *Rejection {
	p, r := decodeAs[SetOutputs](c)
	if r != nil {
		return r
	}
	if p.Outputs == nil {
		return missing(c, "outputs")
	}
	n, r := t.node(c, "node", p.Node)
	if r != nil {
		return r
	}
	if n.Kind != KindCode {
		return reject(CodeNotACodeCell, "node %q is a %s node, not code", n.ID, n.Kind)
	}
	if t.inv {
		t.inverse = []Command{mkCommand(TypeSetOutputs, SetOutputs{Node: ptr(n.ID), Outputs: ptr(n.Outputs)})}
	}
	nn := copyNode(n)
	nn.Outputs = append([]Output{}, *p.Outputs...)
	t.replace(nn)
	return nil
}

func (t *tx) setCell(c Command) *Rejection {
	p, r := decodeAs[SetCell](c)
	if r != nil {
		return r
	}
	switch {
	case p.Cell == nil:
		return missing(c, "cell")
	case p.Value == nil:
		return missing(c, "value")
	case !ValidCell(*p.Cell):
		return reject(CodeInvalidPayload, "set-cell: %q is not a cell name like B2", *p.Cell)
	}
	n, r := t.node(c, "node", p.Node)
	if r != nil {
		return r
	}
	if n.Kind != KindTable {
		return reject(CodeNotATable, "node %q is a %s node, not a table", n.ID, n.Kind)
	}
	if t.inv {
		t.inverse = []Command{mkCommand(TypeSetCell, SetCell{Node: ptr(n.ID), Cell: p.Cell, Value: ptr(n.Cells[*p.Cell])})}
	}
	cells := make(map[string]string, len(n.Cells)+1)
	for k, v := range n.Cells {
		cells[k] = v
	}
	if *p.Value == "" {
		delete(cells, *p.Cell)
	} else {
		cells[*p.Cell] = *p.Value
	}
	nn := copyNode(n)
	nn.Cells = cells
	t.replace(nn)
	return nil
}

// ---- page commands ----

// NormalizeTitle is how titles and aliases are stored and compared: NFC,
// surrounding white space trimmed.
func NormalizeTitle(s string) string {
	return strings.TrimSpace(token.NormalizeTitle(s))
}

func checkTitleChars(c Command, what, s string) *Rejection {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return reject(CodeInvalidPayload, "%s: %s %q contains a control character", c.Type, what, s)
		}
	}
	return nil
}

func (t *tx) normalizeAliases(c Command, in []string) ([]string, *Rejection) {
	out := make([]string, 0, len(in))
	seen := make(map[string]bool, len(in))
	for _, a := range in {
		a = NormalizeTitle(a)
		if a == "" {
			return nil, reject(CodeInvalidPayload, "%s: an alias is empty", c.Type)
		}
		if r := checkTitleChars(c, "alias", a); r != nil {
			return nil, r
		}
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out, nil
}

func (t *tx) title(c Command, p *string) (string, *Rejection) {
	if p == nil {
		return "", missing(c, "title")
	}
	title := NormalizeTitle(*p)
	if title == "" {
		return "", reject(CodeTitleEmpty, "%s: the title is empty", c.Type)
	}
	return title, checkTitleChars(c, "title", title)
}

func (t *tx) createPage(c Command) *Rejection {
	p, r := decodeAs[CreatePage](c)
	if r != nil {
		return r
	}
	if p.Title == nil {
		return missing(c, "title")
	}
	if t.d.page.Born() {
		return reject(CodePageExists, "page %q already exists", t.d.page.ID)
	}
	title, r := t.title(c, p.Title)
	if r != nil {
		return r
	}
	t.d.page.Title, t.d.page.Dir, t.d.page.Aliases = title, deref(p.Dir), []string{}
	t.pageChanged = true
	t.inverse = []Command{}
	return nil
}

func (t *tx) setAliases(c Command) *Rejection {
	p, r := decodeAs[SetAliases](c)
	if r != nil {
		return r
	}
	if p.Aliases == nil {
		return missing(c, "aliases")
	}
	aliases, r := t.normalizeAliases(c, *p.Aliases)
	if r != nil {
		return r
	}
	t.inverse = []Command{mkCommand(TypeSetAliases, SetAliases{Aliases: ptr(t.d.Page().Aliases)})}
	t.d.page.Aliases = aliases
	t.pageChanged = true
	return nil
}

func (t *tx) renamePage(c Command) *Rejection {
	p, r := decodeAs[RenamePage](c)
	if r != nil {
		return r
	}
	title, r := t.title(c, p.Title)
	if r != nil {
		return r
	}
	old := t.d.Page()
	var aliases []string
	if p.Aliases != nil {
		if aliases, r = t.normalizeAliases(c, *p.Aliases); r != nil {
			return r
		}
	} else {
		// The old title becomes an alias; the new title stops being one.
		for _, a := range append(old.Aliases, old.Title) {
			if a != title && !contains(aliases, a) {
				aliases = append(aliases, a)
			}
		}
		if aliases == nil {
			aliases = []string{}
		}
	}
	t.inverse = []Command{mkCommand(TypeRenamePage, RenamePage{Title: ptr(old.Title), Aliases: ptr(old.Aliases)})}
	t.d.page.Title, t.d.page.Aliases = title, aliases
	t.pageChanged = true
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (t *tx) mergePage(c Command) *Rejection {
	p, r := decodeAs[MergePage](c)
	if r != nil {
		return r
	}
	if p.Into == nil || *p.Into == "" {
		return missing(c, "into")
	}
	if *p.Into == t.d.page.ID {
		return reject(CodeMergeIntoSelf, "page %q cannot merge into itself", t.d.page.ID)
	}
	if t.d.page.Merged() {
		return reject(CodeAlreadyMerged, "page %q was already merged into %q", t.d.page.ID, t.d.page.MergedInto)
	}
	var records []Node
	var all []*Node
	for _, root := range t.d.childIDs("") {
		for _, n := range t.d.subtree(root) { // document order
			records = append(records, *n)
			all = append(all, n)
		}
	}
	if records == nil {
		records = []Node{}
	}
	t.inverse = []Command{mkCommand(TypeRestorePage, RestorePage{Page: ptr(t.d.page.ID), Nodes: &records})}
	for _, n := range all {
		t.remove(n)
	}
	t.d.page.MergedInto = *p.Into
	t.pageChanged = true
	return nil
}

func (t *tx) restorePage(c Command) *Rejection {
	p, r := decodeAs[RestorePage](c)
	if r != nil {
		return r
	}
	switch {
	case p.Page == nil:
		return missing(c, "page")
	case p.Nodes == nil:
		return missing(c, "nodes")
	}
	if *p.Page != t.d.page.ID {
		return reject(CodeInvalidPayload, "restore-page: payload.page %q is not this page %q", *p.Page, t.d.page.ID)
	}
	if !t.d.page.Merged() {
		return reject(CodeNotMerged, "page %q is not merged", t.d.page.ID)
	}
	if _, r := t.insertRecords(c, *p.Nodes); r != nil {
		return r
	}
	t.inverse = []Command{mkCommand(TypeMergePage, MergePage{Into: ptr(t.d.page.MergedInto)})}
	t.d.page.MergedInto = ""
	t.pageChanged = true
	return nil
}
