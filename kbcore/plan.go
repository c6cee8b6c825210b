package kbcore

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/subspace/kbkit/kbcore/rank"
	"github.com/subspace/kbkit/kbcore/token"
)

// Planner rejection codes (spec/planner.md).
const (
	CodeTitleTaken = "title-taken"
	CodeAliasTaken = "alias-taken"
)

// implicitPageNamespace is the UUIDv5 namespace of implicitly created pages.
var implicitPageNamespace, _ = parseUUID("ad3e1dfe-7b0d-4755-8128-04d73044a43c")

// ImplicitDir is the dir of implicitly created pages.
const ImplicitDir = "unfiled"

// Envelope is a command as a server receives it: the command plus who sent
// it and which page it is for.
type Envelope struct {
	ID       string          `json:"id"`
	DeviceID string          `json:"device_id"`
	PageID   string          `json:"page_id"`
	Type     string          `json:"type"`
	Payload  json.RawMessage `json:"payload"`
	// Parsed: as Command.Parsed, for the envelope's payload.
	Parsed Parsed `json:"-"`
}

// Command returns the page-local command of the envelope.
func (e Envelope) Command() Command {
	return Command{ID: e.ID, Type: e.Type, Payload: e.Payload, Parsed: e.Parsed}
}

// NodeAt names a node of a page.
type NodeAt struct {
	PageID string `json:"page"`
	NodeID string `json:"node"`
}

// KB is the read-only view of one workspace that Plan reads. Titles and
// aliases passed in are normalised (NormalizeTitle).
type KB interface {
	// Doc returns a page's document; false when no page has that id.
	Doc(pageID string) (Doc, bool)
	// PageByTitle finds the live (born, not merged) page with that title.
	PageByTitle(title string) (string, bool)
	// PageByAlias finds the live page with that alias.
	PageByAlias(alias string) (string, bool)
	// Referrers lists the nodes of live pages whose text has a ref whose
	// normalised title is title, sorted by page id then node id.
	Referrers(title string) []NodeAt
}

// Effect is one command of a plan, for one page.
type Effect struct {
	PageID string  `json:"page"`
	Cmd    Command `json:"cmd"`
	// Cause is the origin command's id for derived commands, "" for the origin.
	Cause string `json:"cause,omitempty"`
	// Result is the effect applied to its page as the plan left it: what to
	// write (Changed, PageChanged, Inverse), so that nobody applies it twice.
	Result Result `json:"-"`
}

// Plan is what one command does to a workspace.
type Plan struct {
	// Rejected is set when the command must not be applied; nothing is written
	// but the rejection itself.
	Rejected *Rejection
	// Effects are applied in order, each with Apply on its page's current
	// document, each taking the next seq of its page. The first is the origin
	// command on its own page. Every effect applies: Plan checked them.
	Effects []Effect
	// Locks are the pages to lock before applying, in lock order (sorted):
	// every page an effect touches.
	Locks []string
	// Docs are the documents after the plan, by page id.
	Docs map[string]Doc
}

// PlanCommand plans one command of a workspace: the title and alias rules,
// link resolution with implicit page creation, and the cross-page effects of
// rename-page and merge-page (spec/planner.md). It is pure.
func PlanCommand(kb KB, workspaceID string, env Envelope) Plan {
	p := planner{kb: kb, ws: workspaceID, env: env, docs: map[string]Doc{}}
	if rej := p.run(); rej != nil {
		return Plan{Rejected: rej}
	}
	locks := make([]string, 0, len(p.docs))
	for id := range p.docs {
		locks = append(locks, id)
	}
	sort.Strings(locks)
	return Plan{Effects: p.effects, Locks: locks, Docs: p.docs}
}

type planner struct {
	kb      KB
	ws      string
	env     Envelope
	docs    map[string]Doc // pages touched so far, as the plan leaves them
	effects []Effect
	derived int
	created map[string]bool // titles created implicitly by this plan
}

func (p *planner) doc(id string) (Doc, bool) {
	if d, ok := p.docs[id]; ok {
		return d, true
	}
	return p.kb.Doc(id)
}

// resolve finds the live page a title refers to: exact title, then alias.
func (p *planner) resolve(title string) (string, bool) {
	if id, ok := p.kb.PageByTitle(title); ok {
		return id, true
	}
	return p.kb.PageByAlias(title)
}

// taken reports whether name is the title or an alias of a live page other
// than self.
func (p *planner) taken(name, self string) (string, bool) {
	if id, ok := p.kb.PageByTitle(name); ok && id != self {
		return id, true
	}
	if id, ok := p.kb.PageByAlias(name); ok && id != self {
		return id, true
	}
	return "", false
}

// apply applies c to page id and records the effect.
func (p *planner) apply(pageID string, c Command, cause string) (Result, *Rejection) {
	d, ok := p.doc(pageID)
	if !ok {
		d = Doc{page: Page{ID: pageID}}
	}
	res := Apply(d, c)
	if res.Rejected != nil {
		if cause != "" {
			res.Rejected.Message = fmt.Sprintf("derived %s on page %s: %s", c.Type, pageID, res.Rejected.Message)
		}
		return res, res.Rejected
	}
	p.docs[pageID] = res.Doc
	p.effects = append(p.effects, Effect{PageID: pageID, Cmd: c, Cause: cause, Result: res})
	return res, nil
}

// derive applies a derived command with its deterministic id.
func (p *planner) derive(pageID, typ string, payload any) *Rejection {
	c := mkCommand(typ, payload)
	c.ID = DerivedID(p.env.ID, pageID, p.derived)
	c.Parsed = Parsed{Canonical: true} // mkCommand writes canonical JSON
	p.derived++
	_, rej := p.apply(pageID, c, p.env.ID)
	return rej
}

// DerivedID is the id of the ordinal-th derived command of a plan (counting
// from 0 in plan order), on page pageID: UUIDv5(origin, pageID + ":" + ordinal).
// An origin id that is not a uuid is first mapped into the implicit-page
// namespace.
func DerivedID(origin, pageID string, ordinal int) string {
	ns, ok := parseUUID(origin)
	if !ok {
		ns = uuidSHA1(implicitPageNamespace, []byte(origin))
	}
	return uuidSHA1(ns, []byte(fmt.Sprintf("%s:%d", pageID, ordinal))).String()
}

// ImplicitPageID is the id of the page implicitly created for title in a
// workspace, so that concurrent creators agree.
func ImplicitPageID(workspaceID, title string) string {
	return uuidSHA1(implicitPageNamespace, []byte(workspaceID+":page:"+NormalizeTitle(title))).String()
}

func (p *planner) run() *Rejection {
	env := p.env
	if _, ok := p.kb.Doc(env.PageID); !ok && env.Type != TypeCreatePage {
		return reject(CodePageNotFound, "page %q does not exist", env.PageID)
	}
	if rej := p.checkNames(); rej != nil {
		return rej
	}
	if env.Type == TypeMergePage {
		if rej := p.checkMergeTarget(); rej != nil {
			return rej
		}
	}
	before, _ := p.doc(env.PageID)
	res, rej := p.apply(env.PageID, env.Command(), "")
	if rej != nil {
		return rej
	}
	switch env.Type {
	case TypeRenamePage:
		// Titles compare normalised, stored ones too (spec/planner.md 1, Names).
		old, now := NormalizeTitle(before.page.Title), NormalizeTitle(res.Doc.page.Title)
		if old != now {
			if rej := p.rewriteRefs(old, now); rej != nil {
				return rej
			}
		}
	case TypeMergePage:
		if rej := p.merge(before, res); rej != nil {
			return rej
		}
	case TypeRestorePage:
		if rej := p.unmerge(before, res); rej != nil {
			return rej
		}
	}
	return p.resolveRefs(env.PageID, res.Changed)
}

// unmerge takes back from the merge target what a merge gave it: the
// restored page's roots (deleted on the target when still there) and its
// title and aliases (dropped from the target's aliases). Refs rewritten to
// the target's title stay: they still resolve.
func (p *planner) unmerge(before Doc, res Result) *Rejection {
	into := before.page.MergedInto
	target, ok := p.doc(into)
	if !ok || !target.page.Born() || target.page.Merged() {
		return nil
	}
	for _, id := range res.Doc.childIDs("") {
		if n, ok := target.get(id); ok && n.Parent == "" {
			if rej := p.derive(into, TypeDelete, NodeRef{Node: ptr(id)}); rej != nil {
				return rej
			}
		}
	}
	names := append([]string{before.page.Title}, before.page.Aliases...)
	var kept []string
	for _, a := range target.page.Aliases {
		if !contains(names, a) {
			kept = append(kept, a)
		}
	}
	if len(kept) != len(target.page.Aliases) {
		if kept == nil {
			kept = []string{}
		}
		return p.derive(into, TypeSetAliases, SetAliases{Aliases: &kept})
	}
	return nil
}

// checkNames applies the title and alias rules of create-page, rename-page
// and set-aliases.
func (p *planner) checkNames() *Rejection {
	env := p.env
	var title *string
	var aliases *[]string
	switch env.Type {
	case TypeCreatePage:
		if pl, r := decodeAs[CreatePage](env.Command()); r == nil {
			title = pl.Title
		}
	case TypeRenamePage:
		if pl, r := decodeAs[RenamePage](env.Command()); r == nil {
			title, aliases = pl.Title, pl.Aliases
		}
	case TypeSetAliases:
		if pl, r := decodeAs[SetAliases](env.Command()); r == nil {
			aliases = pl.Aliases
		}
	case TypeRestorePage:
		// The page comes back to life with its title and aliases, which
		// others may have taken meanwhile (its merge target has its title
		// as an alias, for one).
		if d, ok := p.kb.Doc(env.PageID); ok && d.page.Merged() {
			pg := d.Page()
			for _, name := range append([]string{pg.Title}, pg.Aliases...) {
				// The merge target gives its names back (unmerge); anyone
				// else holding one blocks the restore.
				if other, ok := p.taken(name, env.PageID); ok && other != pg.MergedInto {
					return reject(CodeTitleTaken, "name %q of the restored page is taken by page %s", name, other)
				}
			}
		}
	}
	if title != nil {
		t := NormalizeTitle(*title)
		if other, ok := p.taken(t, env.PageID); ok && t != "" {
			return reject(CodeTitleTaken, "title %q is taken by page %s", t, other)
		}
	}
	if aliases != nil {
		for _, a := range *aliases {
			a = NormalizeTitle(a)
			if other, ok := p.taken(a, env.PageID); ok && a != "" {
				return reject(CodeAliasTaken, "alias %q is taken by page %s", a, other)
			}
		}
	}
	return nil
}

func (p *planner) checkMergeTarget() *Rejection {
	pl, r := decodeAs[MergePage](p.env.Command())
	if r != nil || pl.Into == nil || *pl.Into == "" || *pl.Into == p.env.PageID {
		return nil // the reducer rejects these
	}
	d, ok := p.kb.Doc(*pl.Into)
	if !ok || !d.page.Born() || d.page.Merged() {
		return reject(CodePageNotFound, "merge target %q is not a live page", *pl.Into)
	}
	return nil
}

// merge moves the merged page's content to the target: its roots after the
// target's last root, its title and aliases into the target's aliases, and
// refs to its title rewritten to the target's title.
func (p *planner) merge(before Doc, res Result) *Rejection {
	src := before.page
	into := res.Doc.page.MergedInto
	target, _ := p.doc(into)
	if roots := before.childIDs(""); len(roots) > 0 {
		last, _ := target.lastChild("")
		lo := ""
		if last != nil {
			lo = last.Rank
		}
		ranks, err := rankNBetween(lo, len(roots))
		if err != nil {
			return reject(CodeRankExhausted, "merge: %v", err)
		}
		newRank := map[string]string{}
		for i, id := range roots {
			newRank[id] = ranks[i]
		}
		var records []Node
		for _, id := range roots {
			for _, n := range before.subtree(id) {
				rec := *n
				if r, ok := newRank[rec.ID]; ok {
					rec.Rank = r
				}
				records = append(records, rec)
			}
		}
		if rej := p.derive(into, TypeRestore, Restore{Nodes: &records}); rej != nil {
			return rej
		}
	}
	tp := target.Page()
	aliases := append([]string{}, tp.Aliases...)
	for _, a := range append([]string{src.Title}, src.Aliases...) {
		if a != tp.Title && !contains(aliases, a) {
			aliases = append(aliases, a)
		}
	}
	if len(aliases) != len(tp.Aliases) {
		if rej := p.derive(into, TypeSetAliases, SetAliases{Aliases: &aliases}); rej != nil {
			return rej
		}
	}
	return p.rewriteRefs(NormalizeTitle(src.Title), NormalizeTitle(tp.Title))
}

func rankNBetween(lo string, n int) ([]string, error) {
	return rank.NBetween(lo, "", n)
}

// rewriteRefs rewrites every ref titled old (links, embeds, tags) to new in
// the nodes that have one, as derived edit-text commands.
func (p *planner) rewriteRefs(old, now string) *Rejection {
	for _, at := range p.kb.Referrers(old) {
		if d, ok := p.doc(at.PageID); ok && d.page.Merged() {
			at.PageID = d.page.MergedInto // its nodes moved there in this plan
		}
		d, ok := p.doc(at.PageID)
		if !ok {
			continue
		}
		n, ok := d.get(at.NodeID)
		if !ok || n.Kind == KindCode {
			continue
		}
		text, changed := RewriteRefs(n.Text, old, now)
		if !changed {
			continue
		}
		if rej := p.derive(at.PageID, TypeEditText, EditText{Node: ptr(n.ID), Text: &text}); rej != nil {
			return rej
		}
	}
	return nil
}

// RewriteRefs rewrites the spans of refs whose normalised title is old to
// refer to now: [[now]], ((now)), and the tag spelling of now. Nested spans
// are rewritten innermost first; an outer span containing a rewritten one is
// left alone. changed reports whether the text differs: a span re-spelt
// as it was (old and now the same title) is no change.
func RewriteRefs(text, old, now string) (out string, changed bool) {
	refs := token.Tokenize(text).Refs
	out = text
	limit := len(text) + 1 // spans at or after limit were already handled
	for i := len(refs) - 1; i >= 0; i-- {
		r := refs[i]
		if NormalizeTitle(r.Title) != old || r.End > limit {
			continue
		}
		var spelling string
		switch r.Kind {
		case token.KindLink:
			spelling = "[[" + now + "]]"
		case token.KindEmbed:
			spelling = "((" + now + "))"
		default:
			spelling = token.TagSpelling(now)
		}
		if !spellable(spelling, r.Kind, now) {
			continue // the new title cannot be written this way: leave the ref
		}
		out = out[:r.Start] + spelling + out[r.End:]
		limit = r.Start
	}
	return out, out != text
}

// spellable reports whether spelling tokenizes back to exactly one ref of
// that kind and title covering all of it (a title holding "]]" cannot be
// written as a link, for example).
func spellable(spelling, kind, title string) bool {
	refs := token.Tokenize(spelling).Refs
	return len(refs) == 1 && refs[0].Kind == kind && refs[0].Title == title &&
		refs[0].Start == 0 && refs[0].End == len(spelling)
}

// resolveRefs creates, implicitly, a page for every ref title in the changed
// nodes of a page that no live page has as title or alias.
func (p *planner) resolveRefs(pageID string, changed []string) *Rejection {
	d, _ := p.doc(pageID)
	var titles []string
	for _, id := range changed {
		n, ok := d.get(id)
		if !ok {
			continue
		}
		for _, r := range IndexNode(*n).Refs {
			titles = append(titles, NormalizeTitle(r.Title))
		}
	}
	for _, t := range titles {
		if t == "" || p.created[t] || strings.IndexFunc(t, isControl) >= 0 {
			continue // no page can have this title (create-page would reject it)
		}
		if _, ok := p.resolve(t); ok {
			continue
		}
		if own, ok := p.doc(pageID); ok && (own.page.Title == t || contains(own.page.Aliases, t)) {
			continue
		}
		id := ImplicitPageID(p.ws, t)
		if d, ok := p.doc(id); ok && d.page.Born() {
			continue // created before and renamed since: leave the ref unresolved
		}
		if p.created == nil {
			p.created = map[string]bool{}
		}
		p.created[t] = true
		if rej := p.derive(id, TypeCreatePage, CreatePage{Title: ptr(t), Dir: ptr(ImplicitDir)}); rej != nil {
			return rej
		}
	}
	return nil
}

// isControl reports a character no title may contain (U+0000-U+001F, U+007F).
func isControl(r rune) bool { return r < 0x20 || r == 0x7f }
