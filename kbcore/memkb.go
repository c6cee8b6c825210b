package kbcore

import "sort"

// MemKB is an in-memory KB over a set of page documents: what the planner
// cases, the simulator's model and tests use. The server implements KB over
// its tables instead. A MemKB is a value built once; Apply a Plan's Docs to
// get the next one with With.
type MemKB struct {
	docs map[string]Doc
}

// NewMemKB indexes the given pages.
func NewMemKB(docs ...Doc) MemKB {
	m := MemKB{docs: make(map[string]Doc, len(docs))}
	for _, d := range docs {
		m.docs[d.page.ID] = d
	}
	return m
}

// With returns a MemKB with the given documents replacing pages of the same id.
func (m MemKB) With(docs map[string]Doc) MemKB {
	n := MemKB{docs: make(map[string]Doc, len(m.docs)+len(docs))}
	for id, d := range m.docs {
		n.docs[id] = d
	}
	for id, d := range docs {
		n.docs[id] = d
	}
	return n
}

// Doc implements KB.
func (m MemKB) Doc(pageID string) (Doc, bool) {
	d, ok := m.docs[pageID]
	return d, ok
}

// Pages returns the page ids in order.
func (m MemKB) Pages() []string {
	ids := make([]string, 0, len(m.docs))
	for id := range m.docs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func (m MemKB) live() []Doc {
	var out []Doc
	for _, id := range m.Pages() {
		if d := m.docs[id]; d.page.Born() && !d.page.Merged() {
			out = append(out, d)
		}
	}
	return out
}

// PageByTitle implements KB.
func (m MemKB) PageByTitle(title string) (string, bool) {
	for _, d := range m.live() {
		if NormalizeTitle(d.page.Title) == title {
			return d.page.ID, true
		}
	}
	return "", false
}

// PageByAlias implements KB.
func (m MemKB) PageByAlias(alias string) (string, bool) {
	for _, d := range m.live() {
		for _, a := range d.page.Aliases {
			if NormalizeTitle(a) == alias {
				return d.page.ID, true
			}
		}
	}
	return "", false
}

// Referrers implements KB.
func (m MemKB) Referrers(title string) []NodeAt {
	var out []NodeAt
	for _, d := range m.live() {
		for _, n := range d.Nodes() {
			for _, r := range IndexNode(n).Refs {
				if NormalizeTitle(r.Title) == title {
					out = append(out, NodeAt{PageID: d.page.ID, NodeID: n.ID})
					break
				}
			}
		}
	}
	return out
}
