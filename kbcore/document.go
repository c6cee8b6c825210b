package kbcore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"

	"github.com/benbjohnson/immutable"

	"github.com/subspace/kbkit/kbcore/rank"
)

// Node kinds.
const (
	KindText  = "text"
	KindCode  = "code"
	KindTable = "table"
)

// ErrInvalidDoc wraps every reason ParseDoc or NewDoc refuse a document.
var ErrInvalidDoc = errors.New("kbcore: invalid document")

// Page is the page record of a document.
type Page struct {
	ID      string   `json:"id"`
	Title   string   `json:"title"`
	Aliases []string `json:"aliases"`
	Dir     string   `json:"dir"`
	// MergedInto is the id of the page this one was merged into, or "".
	MergedInto string `json:"-"`
}

// Born reports whether the page exists: its create-page command has been
// applied. An unborn page has an empty title.
func (p Page) Born() bool { return p.Title != "" }

// Merged reports whether the page was merged into another.
func (p Page) Merged() bool { return p.MergedInto != "" }

// Output is one output of a code cell.
type Output struct {
	Data string `json:"data"`
	Mime string `json:"mime"`
}

// UnmarshalJSON requires both fields and refuses unknown ones.
func (o *Output) UnmarshalJSON(b []byte) error {
	var j struct {
		Data *string `json:"data"`
		Mime *string `json:"mime"`
	}
	if err := decodeStrict(b, &j); err != nil {
		return err
	}
	if j.Data == nil || j.Mime == nil {
		return errors.New("an output needs mime and data")
	}
	*o = Output{Data: *j.Data, Mime: *j.Mime}
	return nil
}

// Node is one block of a page. A stored Node is never modified: the reducer
// replaces it, so callers must not mutate Outputs or Cells either.
type Node struct {
	ID      string
	Parent  string // "" is the page root
	Rank    string
	Kind    string
	Text    string
	Outputs []Output          // code nodes only (never nil for them)
	Cells   map[string]string // table nodes only (never nil for them)
}

// Doc is one page: its record and its nodes. The zero Doc is an unborn page
// with an empty id. Doc values are immutable and cheap to copy.
type Doc struct {
	page  Page
	nodes *immutable.Map[string, *Node]
	// kids maps a parent id ("" = root) to its children keyed by
	// siblingKey(rank, id), whose byte order is the sibling order. Pages are
	// wide and shallow, so per-parent maps keep neighbour lookups short.
	kids *immutable.Map[string, *siblings]
}

type siblings = immutable.SortedMap[string, string]

// fnvHasher hashes ids with 32-bit FNV-1a: deterministic, and it spreads
// ids that differ only in their last characters across the whole trie.
type fnvHasher struct{}

func (fnvHasher) Hash(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

func (fnvHasher) Equal(a, b string) bool { return a == b }

var (
	stringHash immutable.Hasher[string] = fnvHasher{}
	stringCmp                           = immutable.NewComparer("")
	noSiblings                          = immutable.NewSortedMap[string, string](stringCmp)
)

// siblingKey orders siblings by rank bytes, then id. NUL sorts below every
// character a valid rank or id may contain.
func siblingKey(rk, id string) string {
	return rk + "\x00" + id
}

func (d Doc) init() Doc {
	if d.nodes == nil || d.kids == nil {
		d.nodes = immutable.NewMap[string, *Node](stringHash)
		d.kids = immutable.NewMap[string, *siblings](stringHash)
	}
	return d
}

func (d Doc) siblings(parent string) *siblings {
	if d.kids != nil {
		if s, ok := d.kids.Get(parent); ok {
			return s
		}
	}
	return noSiblings
}

// link adds n to its parent's children; unlink removes it.
func (d *Doc) link(n *Node) {
	d.kids = d.kids.Set(n.Parent, d.siblings(n.Parent).Set(siblingKey(n.Rank, n.ID), n.ID))
}

func (d *Doc) unlink(n *Node) {
	s := d.siblings(n.Parent).Delete(siblingKey(n.Rank, n.ID))
	if s.Len() == 0 {
		d.kids = d.kids.Delete(n.Parent)
	} else {
		d.kids = d.kids.Set(n.Parent, s)
	}
}

// Same reports whether d and o are the same document value: the same
// persistent maps and page record, as when one is a copy of the other.
// Same documents are Equal; Equal ones built apart (parsed twice, or
// reached by different commands) need not be Same. It costs no walk.
func (d Doc) Same(o Doc) bool {
	if d.nodes != o.nodes || d.kids != o.kids {
		return false
	}
	p, q := d.page, o.page
	if p.ID != q.ID || p.Title != q.Title || p.Dir != q.Dir || p.MergedInto != q.MergedInto || len(p.Aliases) != len(q.Aliases) {
		return false
	}
	for i := range p.Aliases {
		if p.Aliases[i] != q.Aliases[i] {
			return false
		}
	}
	return true
}

// Page returns the page record. Aliases is a fresh slice.
func (d Doc) Page() Page {
	p := d.page
	p.Aliases = append([]string{}, d.page.Aliases...)
	return p
}

// Len is the number of nodes.
func (d Doc) Len() int {
	if d.nodes == nil {
		return 0
	}
	return d.nodes.Len()
}

// Node returns the node with the given id.
func (d Doc) Node(id string) (Node, bool) {
	n, ok := d.get(id)
	if !ok {
		return Node{}, false
	}
	return *n, true
}

func (d Doc) get(id string) (*Node, bool) {
	if d.nodes == nil {
		return nil, false
	}
	return d.nodes.Get(id)
}

// Nodes returns every node sorted by id.
func (d Doc) Nodes() []Node {
	out := make([]Node, 0, d.Len())
	if d.nodes == nil {
		return out
	}
	it := d.nodes.Iterator()
	for !it.Done() {
		_, n, _ := it.Next()
		out = append(out, *n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Children returns the children of parent ("" = page root) in sibling order.
func (d Doc) Children(parent string) []Node {
	var out []Node
	for _, id := range d.childIDs(parent) {
		n, _ := d.get(id)
		out = append(out, *n)
	}
	return out
}

func (d Doc) childIDs(parent string) []string {
	s := d.siblings(parent)
	ids := make([]string, 0, s.Len())
	it := s.Iterator()
	for !it.Done() {
		_, id, _ := it.Next()
		ids = append(ids, id)
	}
	return ids
}

// Walk visits the nodes in document order (depth first, parents first,
// siblings in order) until fn returns false.
func (d Doc) Walk(fn func(Node) bool) {
	d.walk("", fn)
}

func (d Doc) walk(parent string, fn func(Node) bool) bool {
	// The sibling map is persistent: iterating it while fn runs is safe,
	// and cheaper than copying its ids first.
	it := d.siblings(parent).Iterator()
	for !it.Done() {
		_, id, _ := it.Next()
		n, _ := d.get(id)
		if !fn(*n) || !d.walk(id, fn) {
			return false
		}
	}
	return true
}

// NodeAt returns the k-th node (from 0) in document order, Walk's order,
// without copying the nodes before it as a Walk would.
func (d Doc) NodeAt(k int) (Node, bool) {
	if k < 0 || k >= d.Len() {
		return Node{}, false
	}
	id, ok := d.nthID("", &k)
	if !ok {
		return Node{}, false
	}
	n, _ := d.get(id)
	return *n, true
}

// nthID finds the *k-th id in document order under parent, counting *k
// down past the ones before it.
func (d Doc) nthID(parent string, k *int) (string, bool) {
	it := d.siblings(parent).Iterator()
	for !it.Done() {
		_, id, _ := it.Next()
		if *k == 0 {
			return id, true
		}
		*k--
		if got, ok := d.nthID(id, k); ok {
			return got, true
		}
	}
	return "", false
}

// subtree returns the node and its descendants in document order (depth
// first, parents first, siblings in order).
func (d Doc) subtree(id string) []*Node {
	n, ok := d.get(id)
	if !ok {
		return nil
	}
	out := []*Node{n}
	stack := [][]string{d.childIDs(id)}
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if len(*top) == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		c := (*top)[0]
		*top = (*top)[1:]
		if cn, ok := d.get(c); ok {
			out = append(out, cn)
			stack = append(stack, d.childIDs(c))
		}
	}
	return out
}

// neighbour returns the sibling entry strictly before (dir<0) or strictly
// after (dir>0) key under parent.
func (d Doc) neighbour(parent, key string, dir int) (*Node, bool) {
	it := d.siblings(parent).Iterator()
	it.Seek(key)
	var k, id string
	var ok bool
	if dir < 0 {
		if it.Done() {
			it.Last()
		} else {
			it.Prev() // step off the first entry >= key
		}
		_, id, ok = it.Prev()
	} else {
		k, id, ok = it.Next()
		if ok && k == key {
			_, id, ok = it.Next()
		}
	}
	if !ok {
		return nil, false
	}
	return d.get(id)
}

func (d Doc) prevSibling(n *Node) (*Node, bool) {
	return d.neighbour(n.Parent, siblingKey(n.Rank, n.ID), -1)
}

func (d Doc) nextSibling(n *Node) (*Node, bool) {
	return d.neighbour(n.Parent, siblingKey(n.Rank, n.ID), +1)
}

func (d Doc) firstChild(parent string) (*Node, bool) {
	it := d.siblings(parent).Iterator()
	if _, id, ok := it.Next(); ok {
		return d.get(id)
	}
	return nil, false
}

func (d Doc) lastChild(parent string) (*Node, bool) {
	it := d.siblings(parent).Iterator()
	it.Last()
	if _, id, ok := it.Next(); ok {
		return d.get(id)
	}
	return nil, false
}

// rankAbove is the smallest rank among parent's children greater than r,
// or "" when there is none.
func (d Doc) rankAbove(parent, r string) string {
	it := d.siblings(parent).Iterator()
	it.Seek(r + "\x01")
	if k, _, ok := it.Next(); ok {
		if i := strings.IndexByte(k, 0); i >= 0 {
			return k[:i]
		}
	}
	return ""
}

// rankTaken reports whether a child of parent already has rank r.
func (d Doc) rankTaken(parent, r string) bool {
	return rankTaken(d.siblings(parent).Iterator(), r)
}

func rankTaken(it *immutable.SortedMapIterator[string, string], r string) bool {
	it.Seek(r + "\x00")
	k, _, ok := it.Next()
	return ok && strings.HasPrefix(k, r+"\x00")
}

// isAncestor reports whether a is n or one of n's ancestors.
func (d Doc) isAncestor(a, n string) bool {
	for n != "" {
		if n == a {
			return true
		}
		node, ok := d.get(n)
		if !ok {
			return false
		}
		n = node.Parent
	}
	return false
}

// ---- construction and JSON ----

// NewDoc builds a document from a page record and nodes in any order. It
// checks everything the reducer relies on: valid unique ids, ranks and
// kinds, existing parents, no cycles, payloads matching the kind.
func NewDoc(p Page, nodes []Node) (Doc, error) {
	if p.Aliases == nil {
		p.Aliases = []string{}
	} else {
		p.Aliases = append([]string{}, p.Aliases...)
	}
	nb := immutable.NewMapBuilder[string, *Node](stringHash)
	kb := map[string]*immutable.SortedMapBuilder[string, string]{}
	for i := range nodes {
		n := normalizeNode(nodes[i])
		if err := checkNode(n); err != nil {
			return Doc{}, err
		}
		if _, dup := nb.Get(n.ID); dup {
			return Doc{}, fmt.Errorf("%w: duplicate node id %q", ErrInvalidDoc, n.ID)
		}
		nb.Set(n.ID, &n)
		if kb[n.Parent] == nil {
			kb[n.Parent] = immutable.NewSortedMapBuilder[string, string](stringCmp)
		}
		if rankTaken(kb[n.Parent].Iterator(), n.Rank) {
			return Doc{}, fmt.Errorf("%w: node %q: a sibling already has rank %q", ErrInvalidDoc, n.ID, n.Rank)
		}
		kb[n.Parent].Set(siblingKey(n.Rank, n.ID), n.ID)
	}
	kids := immutable.NewMapBuilder[string, *siblings](stringHash)
	for parent, b := range kb {
		kids.Set(parent, b.Map())
	}
	d := Doc{page: p, nodes: nb.Map(), kids: kids.Map()}
	// Every parent exists and following parents from any node ends at the root.
	state := map[string]uint8{} // 1 = on the current path, 2 = reaches the root
	it := d.nodes.Iterator()
	for !it.Done() {
		id, _, _ := it.Next()
		var path []string
		cur := id
		for cur != "" && state[cur] != 2 {
			if state[cur] == 1 {
				return Doc{}, fmt.Errorf("%w: parent cycle through node %q", ErrInvalidDoc, cur)
			}
			state[cur] = 1
			path = append(path, cur)
			n, ok := d.get(cur)
			if !ok {
				return Doc{}, fmt.Errorf("%w: node %q has missing parent %q", ErrInvalidDoc, path[len(path)-2], cur)
			}
			cur = n.Parent
		}
		for _, p := range path {
			state[p] = 2
		}
	}
	return d, nil
}

func normalizeNode(n Node) Node {
	if n.Kind == "" {
		n.Kind = KindText
	}
	switch n.Kind {
	case KindCode:
		if n.Outputs == nil {
			n.Outputs = []Output{}
		} else {
			n.Outputs = append([]Output{}, n.Outputs...)
		}
	case KindTable:
		cells := make(map[string]string, len(n.Cells))
		for k, v := range n.Cells {
			cells[k] = v
		}
		n.Cells = cells
	}
	return n
}

func checkNode(n Node) error {
	switch {
	case !ValidID(n.ID):
		return fmt.Errorf("%w: invalid node id %q (1-64 of [A-Za-z0-9_-])", ErrInvalidDoc, n.ID)
	case n.Parent != "" && !ValidID(n.Parent):
		return fmt.Errorf("%w: node %q: invalid parent id %q", ErrInvalidDoc, n.ID, n.Parent)
	case n.Parent == n.ID:
		return fmt.Errorf("%w: node %q is its own parent", ErrInvalidDoc, n.ID)
	case !rank.Valid(n.Rank):
		return fmt.Errorf("%w: node %q: invalid rank %q", ErrInvalidDoc, n.ID, n.Rank)
	case n.Kind != KindText && n.Kind != KindCode && n.Kind != KindTable:
		return fmt.Errorf("%w: node %q: unknown kind %q", ErrInvalidDoc, n.ID, n.Kind)
	case n.Kind != KindCode && len(n.Outputs) > 0:
		return fmt.Errorf("%w: node %q: only code nodes have outputs", ErrInvalidDoc, n.ID)
	case n.Kind != KindTable && len(n.Cells) > 0:
		return fmt.Errorf("%w: node %q: only table nodes have cells", ErrInvalidDoc, n.ID)
	}
	for c := range n.Cells {
		if !ValidCell(c) {
			return fmt.Errorf("%w: node %q: invalid cell name %q", ErrInvalidDoc, n.ID, c)
		}
	}
	return nil
}

// nodeJSON is the canonical JSON shape of a node: keys in sorted order,
// outputs only (and always) on code nodes, cells only (and always) on tables.
type nodeJSON struct {
	Cells   *map[string]string `json:"cells,omitempty"`
	ID      string             `json:"id"`
	Kind    string             `json:"kind"`
	Outputs *[]Output          `json:"outputs,omitempty"`
	Parent  *string            `json:"parent"`
	Rank    string             `json:"rank"`
	Text    *string            `json:"text"`
}

type pageJSON struct {
	Aliases    []string `json:"aliases"`
	Dir        string   `json:"dir"`
	ID         string   `json:"id"`
	MergedInto *string  `json:"merged_into"`
	Title      string   `json:"title"`
}

func (j nodeJSON) toNode() Node {
	n := Node{ID: j.ID, Kind: j.Kind, Rank: j.Rank}
	if j.Text != nil {
		n.Text = *j.Text
	}
	if j.Parent != nil {
		n.Parent = *j.Parent
	}
	if j.Outputs != nil {
		n.Outputs = *j.Outputs
	}
	if j.Cells != nil {
		n.Cells = *j.Cells
	}
	return n
}

// MarshalJSON writes a node in canonical form.
func (n Node) MarshalJSON() ([]byte, error) { return appendNode(nil, n), nil }

// UnmarshalJSON reads a node record: id, rank and text are required, a
// missing parent is null and a missing kind is text; unknown fields are an
// error. These are the record's shape (spec/README.md 2.1, Nested
// records); its values are checked by checkNode, where a parent of ""
// (which names no node, unlike null) fails as an invalid parent id and a
// kind of "" (no kind, unlike null) as an unknown kind.
func (n *Node) UnmarshalJSON(b []byte) error {
	var j struct {
		Cells   *map[string]string `json:"cells"`
		ID      *string            `json:"id"`
		Kind    *string            `json:"kind"`
		Outputs *[]Output          `json:"outputs"`
		Parent  *string            `json:"parent"`
		Rank    *string            `json:"rank"`
		Text    *string            `json:"text"`
	}
	if err := decodeStrict(b, &j); err != nil {
		return err
	}
	if j.ID == nil || j.Rank == nil || j.Text == nil {
		return errors.New("a node record needs id, rank and text")
	}
	*n = nodeJSON{Cells: j.Cells, ID: *j.ID, Kind: deref(j.Kind), Outputs: j.Outputs, Parent: j.Parent, Rank: *j.Rank, Text: j.Text}.toNode()
	if j.Parent != nil && *j.Parent == "" {
		n.Parent = emptyString
	}
	if j.Kind != nil && *j.Kind == "" {
		n.Kind = emptyString
	}
	return nil
}

// emptyString stands for a record's `parent: ""` or `kind: ""` until
// checkNode refuses it: a Node's "" is the root (parent) or the default
// kind, which only null or absence spell.
const emptyString = `""`

// MarshalJSON writes the page record in canonical form.
func (p Page) MarshalJSON() ([]byte, error) { return appendPage(nil, p), nil }

// UnmarshalJSON reads a page record; unknown fields are an error.
func (p *Page) UnmarshalJSON(b []byte) error {
	var j pageJSON
	if err := decodeStrict(b, &j); err != nil {
		return err
	}
	*p = Page{ID: j.ID, Title: j.Title, Aliases: j.Aliases, Dir: j.Dir}
	if j.MergedInto != nil {
		p.MergedInto = *j.MergedInto
	}
	return nil
}

// MarshalJSON writes the canonical form (RFC 8785, nodes sorted by id;
// canonical.go).
func (d Doc) MarshalJSON() ([]byte, error) {
	nodes := d.Nodes()
	size := 96 + len(d.page.Title)
	for _, n := range nodes {
		size += 64 + len(n.ID) + len(n.Parent) + len(n.Rank) + len(n.Text)
	}
	b := append(make([]byte, 0, size), `{"nodes":[`...)
	for i, n := range nodes {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendNode(b, n)
	}
	b = append(b, `],"page":`...)
	return append(appendPage(b, d.page), '}'), nil
}

// UnmarshalJSON is ParseDoc.
func (d *Doc) UnmarshalJSON(b []byte) error {
	nd, err := ParseDoc(b)
	if err != nil {
		return err
	}
	*d = nd
	return nil
}

// ParseDoc reads a document in canonical JSON (any key or node order) and
// validates it like NewDoc. A missing node kind means text.
func ParseDoc(b []byte) (Doc, error) {
	var j struct {
		Nodes []json.RawMessage `json:"nodes"`
		Page  json.RawMessage   `json:"page"`
	}
	if err := decodeStrict(b, &j); err != nil {
		return Doc{}, fmt.Errorf("%w: %v", ErrInvalidDoc, err)
	}
	var p Page
	if len(j.Page) > 0 && !bytes.Equal(j.Page, []byte("null")) {
		if err := json.Unmarshal(j.Page, &p); err != nil {
			return Doc{}, fmt.Errorf("%w: page: %v", ErrInvalidDoc, err)
		}
	}
	nodes := make([]Node, 0, len(j.Nodes))
	for i, raw := range j.Nodes {
		var n Node
		if err := json.Unmarshal(raw, &n); err != nil {
			return Doc{}, fmt.Errorf("%w: nodes[%d]: %v", ErrInvalidDoc, i, err)
		}
		nodes = append(nodes, n)
	}
	return NewDoc(p, nodes)
}

// Equal reports whether two documents have the same canonical form.
func (d Doc) Equal(o Doc) bool {
	a, _ := d.MarshalJSON()
	b, _ := o.MarshalJSON()
	return bytes.Equal(a, b)
}

// DecodeStrict decodes exactly one JSON value into v, refusing unknown
// fields and trailing data: the decoding every trust boundary uses.
func DecodeStrict(b []byte, v any) error { return decodeStrict(b, v) }

func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after JSON value")
	}
	return exactKeys(b, reflect.TypeOf(v))
}

// Check verifies a document's invariants: it is a valid tree (as NewDoc
// requires) and the sibling order holds exactly its nodes. Every Doc the
// reducer returns passes; tests call it after every command.
func (d Doc) Check() error {
	d = d.init()
	entries := 0
	kit := d.kids.Iterator()
	for !kit.Done() {
		_, s, _ := kit.Next()
		if s.Len() == 0 {
			return fmt.Errorf("%w: an empty sibling list is stored", ErrInvalidDoc)
		}
		entries += s.Len()
	}
	if d.nodes.Len() != entries {
		return fmt.Errorf("%w: %d nodes but %d sibling entries", ErrInvalidDoc, d.nodes.Len(), entries)
	}
	it := d.nodes.Iterator()
	for !it.Done() {
		id, n, _ := it.Next()
		if id != n.ID {
			return fmt.Errorf("%w: node stored under %q has id %q", ErrInvalidDoc, id, n.ID)
		}
		if got, ok := d.siblings(n.Parent).Get(siblingKey(n.Rank, n.ID)); !ok || got != id {
			return fmt.Errorf("%w: node %q missing from the sibling order", ErrInvalidDoc, id)
		}
	}
	_, err := NewDoc(d.page, d.Nodes())
	return err
}
