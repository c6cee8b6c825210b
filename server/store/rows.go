package store

import (
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/subspace/kbkit/kbcore"
)

// txWrites collects the rows one command transaction writes, alone or as a
// group, so that they travel as a fixed handful of multi-row statements
// (flush) whatever the number of commands, pages and nodes: one delete of
// index rows (of the three tables, for the nodes whose state before the
// transaction had some), one delete of nodes, one insert per index table,
// and one statement (merged) of the rest: the inserts of log rows, the
// upsert of nodes, the update of page seqs (in an optimistic transaction,
// checking the heads) and the notifications. Each page's nodes are
// written once, in their final state, and each page's last seq
// ("committed up to seq") goes into the transaction's notification
// (NotifyPayloads). Page records (create, rename, aliases, merge) are rare
// and queued at once, before the rows, as their own statements.
type txWrites struct {
	pages   map[string]*pageWrites
	created map[string]string // title -> id of the pages this transaction creates
	log     logRows
	rej     rejRows
	// guard, in an optimistic transaction, is the head each page of the
	// group was planned on: the page seqs are then written by
	// sqlPageSeqsGuarded, which checks them.
	guard map[string]head
}

// pageWrites is what the transaction did to one page so far.
type pageWrites struct {
	ws      string
	started bool  // seq holds the page's seq (its head, then its last command's)
	seq     int64 // the page's seq after the commands so far
	changed bool  // a command committed on the page
	doc     kbcore.Doc
	dirty   map[string]bool // nodes to write (or delete) in their final state
	// before is the page's document at its head before the transaction,
	// when known (a page not yet created has none): a changed node whose
	// state there has no index rows has none to delete.
	before      kbcore.Doc
	knownBefore bool
}

// hadIndexRows reports whether node id may have index rows in the
// database: its state before the transaction has links, a label or deps
// (IndexNode, as flush writes them), or that state is not known.
func (p *pageWrites) hadIndexRows(id string) bool {
	if !p.knownBefore {
		return true
	}
	n, ok := p.before.Node(id)
	return ok && hasIndexRows(kbcore.IndexNode(n))
}

// hasIndexRows reports whether x gives a node rows in links, labels or
// deps.
func hasIndexRows(x kbcore.NodeIndex) bool {
	return len(x.Refs) > 0 || x.Label != nil || len(x.Deps) > 0
}

func newTxWrites() *txWrites {
	return &txWrites{pages: map[string]*pageWrites{}, created: map[string]string{}}
}

func (t *txWrites) page(id, ws string) *pageWrites {
	p := t.pages[id]
	if p == nil {
		p = &pageWrites{ws: ws, dirty: map[string]bool{}}
		t.pages[id] = p
	}
	return p
}

// logRows are committed command_log rows, one array per column.
type logRows struct {
	ws, id, page, device, typ, payload, inverse []string
	seq                                         []int64
	cause                                       []*string
}

// rejRows are rejected command_log rows (no seq).
type rejRows struct {
	ws, id, page, device, typ, payload, code, message []string
}

func (t *txWrites) committedRow(ws, device string, e kbcore.Effect, seq int64, payload []byte, inverse []byte) {
	l := &t.log
	l.ws = append(l.ws, ws)
	l.id = append(l.id, e.Cmd.ID)
	l.page = append(l.page, e.PageID)
	l.device = append(l.device, device)
	l.typ = append(l.typ, e.Cmd.Type)
	l.payload = append(l.payload, string(payload))
	l.inverse = append(l.inverse, string(inverse))
	l.seq = append(l.seq, seq)
	var cause *string
	if e.Cause != "" {
		c := e.Cause
		cause = &c
	}
	l.cause = append(l.cause, cause)
}

// rejected adds the log row of a rejected command.
func (t *txWrites) rejected(dev Device, env kbcore.Envelope, rej *kbcore.Rejection) {
	r := &t.rej
	r.ws = append(r.ws, dev.WorkspaceID)
	r.id = append(r.id, env.ID)
	r.page = append(r.page, env.PageID)
	r.device = append(r.device, dev.DeviceID)
	r.typ = append(r.typ, env.Type)
	r.payload = append(r.payload, string(payloadJSON(env.Command())))
	r.code = append(r.code, rej.Code)
	r.message = append(r.message, rej.Message)
}

// The statements of flush. Every array parameter is text (cast in SQL), so
// that any driver sends them alike; ids are checked UUIDs by then.
const (
	sqlLogCommitted = `INSERT INTO command_log (workspace_id, id, page_id, seq, device_id, type, payload, inverse, outcome, cause)
		SELECT ws::uuid, id::uuid, page::uuid, seq, dev::uuid, typ, payload::json, inverse::jsonb, 'committed', cause::uuid
		FROM unnest($1::text[], $2::text[], $3::text[], $4::int8[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[])
			AS t(ws, id, page, seq, dev, typ, payload, inverse, cause)`
	sqlLogRejected = `INSERT INTO command_log (workspace_id, id, page_id, device_id, type, payload, outcome, code, message)
		SELECT ws::uuid, id::uuid, page::uuid, dev::uuid, typ, payload::json, 'rejected', code, message
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
			AS t(ws, id, page, dev, typ, payload, code, message)`
	// The index rows of the nodes written, of the three tables, in one
	// statement.
	sqlDelIndex = `WITH x AS (SELECT page::uuid AS page, node FROM unnest($1::text[], $2::text[]) AS u(page, node)),
		a AS (DELETE FROM links l USING x WHERE l.page_id = x.page AND l.node_id = x.node),
		b AS (DELETE FROM labels l USING x WHERE l.page_id = x.page AND l.node_id = x.node)
		DELETE FROM deps d USING x WHERE d.page_id = x.page AND d.node_id = x.node`
	sqlDelNodes = `DELETE FROM nodes n USING unnest($1::text[], $2::text[]) AS x(page, node)
		WHERE n.page_id = x.page::uuid AND n.id = x.node`
	sqlUpsertNodes = `INSERT INTO nodes (workspace_id, page_id, id, parent, rank, kind, text, outputs, cells)
		SELECT ws::uuid, page::uuid, id, parent, rank, kind, text, outputs::jsonb, cells::jsonb
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[])
			AS t(ws, page, id, parent, rank, kind, text, outputs, cells)
		ON CONFLICT (page_id, id) DO UPDATE SET parent = EXCLUDED.parent, rank = EXCLUDED.rank,
			kind = EXCLUDED.kind, text = EXCLUDED.text, outputs = EXCLUDED.outputs, cells = EXCLUDED.cells`
	sqlInsLinks = `INSERT INTO links (workspace_id, page_id, node_id, ord, kind, title, target_page)
		SELECT ws::uuid, page::uuid, node, ord, kind, title, target::uuid
		FROM unnest($1::text[], $2::text[], $3::text[], $4::int4[], $5::text[], $6::text[], $7::text[])
			AS t(ws, page, node, ord, kind, title, target)`
	sqlInsLabels = `INSERT INTO labels (workspace_id, page_id, node_id, key, text, number)
		SELECT ws::uuid, page::uuid, node, key, text, number
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::float8[])
			AS t(ws, page, node, key, text, number)`
	sqlInsDeps = `INSERT INTO deps (workspace_id, page_id, node_id, ord, cell, on_cell, on_page, on_label)
		SELECT ws::uuid, page::uuid, node, ord, cell, nullif(on_cell, ''), nullif(on_page, ''), nullif(on_label, '')
		FROM unnest($1::text[], $2::text[], $3::text[], $4::int4[], $5::text[], $6::text[], $7::text[], $8::text[])
			AS t(ws, page, node, ord, cell, on_cell, on_page, on_label)`
	sqlPageSeqs = `UPDATE pages p SET seq = x.seq FROM unnest($1::text[], $2::int8[]) AS x(id, seq) WHERE p.id = x.id::uuid`
	// sqlPageSeqsGuarded (WITH queries of the merged statement) is
	// sqlPageSeqs of an optimistic transaction (txWrites.guard): it moves
	// each page of the group from the head the commands were planned on
	// (old) to its last seq (a page whose commands were all rejected
	// stays), and with sqlGuardCheck the statement fails (division by
	// zero) unless every page was at that head, in its workspace. The
	// pages are locked by then (an earlier statement), and the statement's
	// snapshot is taken after the locks: the heads it reads are the last
	// committed.
	sqlPageSeqsGuarded = `gx AS (SELECT id::uuid AS id, seq, old, ws::uuid AS ws FROM unnest($1::text[], $2::int8[], $3::int8[], $4::text[]) AS u(id, seq, old, ws)),
		gu AS (UPDATE pages p SET seq = gx.seq FROM gx WHERE p.id = gx.id AND p.seq = gx.old AND p.workspace_id = gx.ws AND gx.seq <> gx.old RETURNING 1),
		gk AS (SELECT 1 FROM pages p JOIN gx ON p.id = gx.id AND p.seq = gx.old AND p.workspace_id = gx.ws WHERE gx.seq = gx.old)`
	// sqlGuardCheck is the check of sqlPageSeqsGuarded: $1 is the number
	// of pages guarded.
	sqlGuardCheck = `1 / ((SELECT count(*) FROM gu) + (SELECT count(*) FROM gk) = $1)::int`
	sqlNotify     = `(SELECT count(pg_notify($1, x)) FROM unnest($2::text[]) AS x)`
)

// flush queues the collected rows into b; kbFor gives the view of a
// workspace, which resolves the link targets of the written nodes.
func (t *txWrites) flush(b *pgx.Batch, kbFor func(ws string) *txKB) {
	var m merged
	defer m.queue(b)
	if l := &t.log; len(l.id) > 0 {
		m.add(partLogCommitted, textArray(l.ws), textArray(l.id), textArray(l.page), l.seq, textArray(l.device), textArray(l.typ), textArray(l.payload), textArray(l.inverse), l.cause)
	}
	if r := &t.rej; len(r.id) > 0 {
		m.add(partLogRejected, textArray(r.ws), textArray(r.id), textArray(r.page), textArray(r.device), textArray(r.typ), textArray(r.payload), textArray(r.code), textArray(r.message))
	}
	ids := make([]string, 0, len(t.pages))
	for id, p := range t.pages {
		if p.changed {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		t.guardInto(&m)
		return
	}
	sort.Strings(ids)
	var (
		xPage, xNode []string // nodes whose index rows are rewritten
		gPage, gNode []string // nodes deleted
		n            struct {
			ws, page, id, rank, kind, text []string
			parent, outputs, cells         []*string
		}
		lk struct {
			ws, page, node, kind, title []string
			ord                         []int32
			target                      []*string
		}
		lb struct {
			ws, page, node, key, text []string
			number                    []*float64
		}
		dp struct {
			ws, page, node, cell, onCell, onPage, onLabel []string
			ord                                           []int32
		}
		seqPage []string
		seqs    []int64
	)
	for _, page := range ids {
		p := t.pages[page]
		seqPage = append(seqPage, page)
		seqs = append(seqs, p.seq)
		changed := make([]string, 0, len(p.dirty))
		for id := range p.dirty {
			changed = append(changed, id)
		}
		sort.Strings(changed)
		kb := kbFor(p.ws)
		for _, id := range changed {
			if p.hadIndexRows(id) {
				xPage, xNode = append(xPage, page), append(xNode, id)
			}
			node, ok := p.doc.Node(id)
			if !ok {
				gPage, gNode = append(gPage, page), append(gNode, id)
				continue
			}
			n.ws, n.page, n.id = append(n.ws, p.ws), append(n.page, page), append(n.id, node.ID)
			n.rank, n.kind, n.text = append(n.rank, node.Rank), append(n.kind, node.Kind), append(n.text, node.Text)
			n.parent = append(n.parent, optional(node.Parent))
			var outputs, cells *string
			if node.Kind == kbcore.KindCode {
				b, _ := json.Marshal(node.Outputs)
				s := string(b)
				outputs = &s
			}
			if node.Kind == kbcore.KindTable {
				b, _ := json.Marshal(node.Cells)
				s := string(b)
				cells = &s
			}
			n.outputs, n.cells = append(n.outputs, outputs), append(n.cells, cells)
			x := kbcore.IndexNode(node)
			for i, r := range x.Refs {
				title := kbcore.NormalizeTitle(r.Title)
				var target *string
				if tid, ok := kb.PageByTitle(title); ok {
					target = &tid
				} else if tid, ok := kb.PageByAlias(title); ok {
					target = &tid
				} else if tid, ok := t.created[title]; ok {
					target = &tid
				}
				lk.ws, lk.page, lk.node = append(lk.ws, p.ws), append(lk.page, page), append(lk.node, node.ID)
				lk.ord, lk.kind, lk.title = append(lk.ord, int32(i)), append(lk.kind, r.Kind), append(lk.title, title)
				lk.target = append(lk.target, target)
			}
			if x.Label != nil {
				lb.ws, lb.page, lb.node = append(lb.ws, p.ws), append(lb.page, page), append(lb.node, node.ID)
				lb.key, lb.text, lb.number = append(lb.key, x.Label.Key), append(lb.text, x.Label.Text), append(lb.number, x.Label.Number)
			}
			for i, d := range x.Deps {
				dp.ws, dp.page, dp.node = append(dp.ws, p.ws), append(dp.page, page), append(dp.node, node.ID)
				dp.ord, dp.cell = append(dp.ord, int32(i)), append(dp.cell, d.Cell)
				dp.onCell, dp.onPage, dp.onLabel = append(dp.onCell, d.On.Cell), append(dp.onPage, d.On.Page), append(dp.onLabel, d.On.Label)
			}
		}
	}
	if len(xPage) > 0 {
		b.Queue(sqlDelIndex, textArray(xPage), textArray(xNode))
	}
	if len(n.id) > 0 {
		m.add(partUpsertNodes, textArray(n.ws), textArray(n.page), textArray(n.id), n.parent, textArray(n.rank), textArray(n.kind), textArray(n.text), n.outputs, n.cells)
	}
	if len(gPage) > 0 {
		b.Queue(sqlDelNodes, textArray(gPage), textArray(gNode))
	}
	if len(lk.node) > 0 {
		b.Queue(sqlInsLinks, textArray(lk.ws), textArray(lk.page), textArray(lk.node), lk.ord, textArray(lk.kind), textArray(lk.title), lk.target)
	}
	if len(lb.node) > 0 {
		b.Queue(sqlInsLabels, textArray(lb.ws), textArray(lb.page), textArray(lb.node), textArray(lb.key), textArray(lb.text), lb.number)
	}
	if len(dp.node) > 0 {
		b.Queue(sqlInsDeps, textArray(dp.ws), textArray(dp.page), textArray(dp.node), dp.ord, textArray(dp.cell), textArray(dp.onCell), textArray(dp.onPage), textArray(dp.onLabel))
	}
	notify := NotifyPayloads(seqPage, seqs)
	if t.guard != nil {
		t.guardInto(&m)
		// A changed page the group did not plan on (none today: a command
		// whose plan leaves its page ends the group) still gets its seq.
		var upage []string
		var useq []int64
		for i, id := range seqPage {
			if _, ok := t.guard[id]; !ok {
				upage, useq = append(upage, id), append(useq, seqs[i])
			}
		}
		seqPage, seqs = upage, useq
	}
	if len(seqPage) > 0 {
		m.add(partPageSeqs, textArray(seqPage), seqs)
	}
	m.add(partNotify, NotifyChannel, textArray(notify))
}

// guardInto adds sqlPageSeqsGuarded, for every page of t.guard in page-id
// order, to m.
func (t *txWrites) guardInto(m *merged) {
	if t.guard == nil {
		return
	}
	ids := make([]string, 0, len(t.guard))
	for id := range t.guard {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	seqs, olds, wss := make([]int64, len(ids)), make([]int64, len(ids)), make([]string, len(ids))
	for i, id := range ids {
		h := t.guard[id]
		olds[i], wss[i], seqs[i] = h.seq, h.ws, h.seq
		if p := t.pages[id]; p != nil && p.changed {
			seqs[i] = p.seq
		}
	}
	m.add(partGuard, textArray(ids), seqs, olds, textArray(wss))
	m.add(partGuardCheck, len(ids))
}

// merged is one statement made of writes that touch distinct rows (the
// committed and the rejected log rows, the nodes written, the pages whose
// seqs move, with or without the guard), as data-modifying WITH queries,
// which PostgreSQL runs to completion whatever the query reads, and of
// expressions selected (the guard's check, the notifications): one
// statement's overhead (bind, executor start, portal, completion) instead
// of one per write. The WITH queries share one snapshot and none sees
// another's rows, so a write that must (the index inserts after the index
// deletes) stays a statement of its own. Each part numbers its parameters
// from $1; the text of each sequence of parts is built once (mergedText).
type merged struct {
	parts []mergedPart
	args  []any
}

// mergedPart is a part of a merged statement: a WITH query or a selected
// expression.
type mergedPart uint8

const (
	partLogCommitted mergedPart = iota
	partLogRejected
	partUpsertNodes
	partGuard
	partPageSeqs
	partGuardCheck // selected
	partNotify     // selected
)

var mergedParts = [...]struct {
	sql string
	sel bool
}{
	partLogCommitted: {"lc AS (" + sqlLogCommitted + ")", false},
	partLogRejected:  {"lr AS (" + sqlLogRejected + ")", false},
	partUpsertNodes:  {"un AS (" + sqlUpsertNodes + ")", false},
	partGuard:        {sqlPageSeqsGuarded, false},
	partPageSeqs:     {"ps AS (" + sqlPageSeqs + ")", false},
	partGuardCheck:   {sqlGuardCheck, true},
	partNotify:       {sqlNotify, true},
}

func (m *merged) add(p mergedPart, args ...any) {
	m.parts = append(m.parts, p)
	m.args = append(m.args, args...)
}

// queue adds the statement to b, if it has anything.
func (m *merged) queue(b *pgx.Batch) {
	if len(m.parts) > 0 {
		b.Queue(mergedText(m.parts), m.args...)
	}
}

var (
	mergedMu    sync.Mutex
	mergedTexts = map[string]string{}
	paramRef    = regexp.MustCompile(`\$([0-9]+)`)
)

// mergedText is the text of the statement of parts, in order, their
// parameters numbered after those of the parts before them.
func mergedText(parts []mergedPart) string {
	key := make([]byte, len(parts))
	for i, p := range parts {
		key[i] = byte(p)
	}
	mergedMu.Lock()
	defer mergedMu.Unlock()
	if q, ok := mergedTexts[string(key)]; ok {
		return q
	}
	var ctes, sels []string
	off := 0
	for _, p := range parts {
		n := 0
		text := paramRef.ReplaceAllStringFunc(mergedParts[p].sql, func(ref string) string {
			i, _ := strconv.Atoi(ref[1:])
			n = max(n, i)
			return "$" + strconv.Itoa(i+off)
		})
		off += n
		if mergedParts[p].sel {
			sels = append(sels, text)
		} else {
			ctes = append(ctes, text)
		}
	}
	var q strings.Builder
	if len(ctes) > 0 {
		q.WriteString("WITH ")
		q.WriteString(strings.Join(ctes, ",\n"))
		q.WriteString("\n")
	}
	q.WriteString("SELECT ")
	if len(sels) == 0 {
		sels = []string{"1"}
	}
	q.WriteString(strings.Join(sels, ", "))
	mergedTexts[string(key)] = q.String()
	return q.String()
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// remember caches the final document of every page the committed
// transaction changed.
func (t *txWrites) remember(s *Store) {
	for id, p := range t.pages {
		if p.changed {
			s.remember(id, p.ws, p.seq, p.doc)
		}
	}
}

// textArray is a text[] parameter that pgx encodes without boxing each
// element (a []string is encoded through an interface value per element,
// an allocation each).
type textArray []string

func (a textArray) Dimensions() []pgtype.ArrayDimension {
	if a == nil {
		return nil
	}
	return []pgtype.ArrayDimension{{Length: int32(len(a)), LowerBound: 1}}
}

func (a textArray) Index(i int) any { return (*textElem)(&a[i]) }

func (a textArray) IndexType() any { return new(textElem) }

// textElem is an element of a textArray: a pointer to it fits an
// interface value without an allocation.
type textElem string

func (t *textElem) TextValue() (pgtype.Text, error) {
	return pgtype.Text{String: string(*t), Valid: true}, nil
}
