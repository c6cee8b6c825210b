package sim

import (
	"fmt"
	"sort"
	"strings"

	"github.com/subspace/kbkit/kbcore"
)

// The checks of the foreign windows (foreign.go) at the end of a seed,
// and the coverage a run reports.

// checkForeign adds the findings on the foreign windows to s.found: the
// final state against the fold of the log, the server documents they
// reported against the log's prefixes, their lost and rejected commands,
// their toasts and their gaps.
func (s *sim) checkForeign(pages map[string]*pageState) {
	if len(s.foreign) == 0 {
		return
	}
	s.drainForeign()
	s.resolveForeign()
	for _, fw := range s.foreign {
		if fw.dead != "" {
			continue
		}
		ps := pages[s.pages[fw.page]]
		if ps.err != "" {
			continue
		}
		st := fw.state
		if n := len(st.Pending); n > 0 {
			s.find(CheckConvergence, "%s still has %d pending commands (%s)", fw.name(), n, strings.Join(shortIDs(st.Pending), " "))
		}
		if !fw.doc.Equal(ps.fold) {
			s.find(CheckConvergence, "%s (page %s, seq %d) renders a document that differs from the fold of the server's log (seq %d):\n%s",
				fw.name(), shortID(ps.id), st.Seq, lastSeq(ps.log), docDiff(ps.fold, fw.doc))
		}
		for _, sd := range fw.servers {
			prefix, _ := kbcore.NewDoc(kbcore.Page{ID: ps.id}, nil)
			for _, ev := range ps.log {
				if ev.Seq > sd.seq {
					break
				}
				prefix = kbcore.Apply(prefix, ev.Cmd).Doc
			}
			if !sd.doc.Equal(prefix) {
				s.find(CheckConvergence, "%s reported its server document at seq %d, which is not the fold of the log's first %d commands:\n%s",
					fw.name(), sd.seq, sd.seq, docDiff(prefix, sd.doc))
				break
			}
		}
		s.checkForeignCommands(fw, ps)
		s.checkClientRules(fw, ps)
		if fw.gapOpen {
			s.stats.Gaps++
			s.find(CheckRefetch, "%s was delivered seq %d on page %s after a hole at seq %d and never called kb.page after it (spec/window.md: a gap refetches)",
				fw.name(), fw.gapAt, shortID(ps.id), fw.gapHole)
		}
	}
}

// checkForeignCommands: every command the client showed was decided,
// and every rejected one was rolled back and toasted.
func (s *sim) checkForeignCommands(fw *foreignWin, ps *pageState) {
	ids := make([]string, 0, len(fw.accepted))
	for id := range fw.accepted {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		o := s.ops[id]
		switch {
		case o == nil && fw.undoIDs[id]:
			// An undo or redo command that reverts a command the server
			// rejected is dropped unsent (spec/window.md, reject).
		case o == nil:
			s.find(CheckExactlyOnce, "%s showed command %s (%s) pending and never posted it: the user's edit is lost", fw.name(), shortID(id), fw.given[id].Type)
		case o.ret == 0 && o.srv.known:
		case o.ret == 0:
			s.find(CheckExactlyOnce, "%s posted command %s (%s) and the server never decided it", fw.name(), shortID(id), o.cmd.Type)
		}
	}
	// A client that names the command of any toast (the optional `id`,
	// spec/ADAPTER.md 7) must name the rejected command of each: its
	// toast is matched by id; one that names none, by code.
	toasted := map[string]int{}
	toastedID := map[string]bool{}
	namesIDs := false
	for _, t := range fw.toasts {
		toasted[t.Code]++
		if t.ID != "" {
			toastedID[t.ID] = true
			namesIDs = true
		}
	}
	pending := map[string]bool{}
	for _, id := range fw.state.Pending {
		pending[id] = true
	}
	for _, o := range s.sortedOps() {
		if o.win != fw.idx || o.rejected == "" {
			continue
		}
		if pending[o.id] {
			s.find(CheckRollback, "%s still holds rejected command %s (%s: %s)", fw.name(), shortID(o.id), o.cmd.Type, o.rejected)
		}
		if o.cmd.Type == kbcore.TypeCreateAfter {
			_, inFold := ps.fold.Node(createdID(o.cmd))
			if _, ok := fw.doc.Node(createdID(o.cmd)); ok && !inFold {
				s.find(CheckRollback, "%s renders node %s of rejected command %s", fw.name(), createdID(o.cmd), shortID(o.id))
			}
		}
		switch {
		case toastedID[o.id]:
		case namesIDs && toasted[o.rejected] > 0:
			s.find(CheckRollback, "%s showed toasts %s but none with the id of its command %s (%s), rejected %s: it names the commands of its toasts, and a toast names the command it rejects (spec/window.md: reject toasts; spec/ADAPTER.md 7)",
				fw.name(), o.rejected, shortID(o.id), o.cmd.Type, o.rejected)
		case toasted[o.rejected] > 0:
			toasted[o.rejected]--
		default:
			s.find(CheckRollback, "%s showed no toast for its command %s (%s), rejected %s (spec/window.md: reject toasts)", fw.name(), shortID(o.id), o.cmd.Type, o.rejected)
		}
	}
}

// resolveForeign asks the server for the outcomes of foreign commands
// whose answer the client never got and no echo reported.
func (s *sim) resolveForeign() {
	byPage := map[string][]string{}
	for _, o := range s.sortedOps() {
		if o.ret == 0 && o.win >= len(s.wins) {
			byPage[o.page] = append(byPage[o.page], o.id)
		}
	}
	for page, ids := range byPage {
		snap, err := s.retryPage(s.kitClient(), page, ids)
		if err != nil {
			continue
		}
		for id, out := range snap.Outcomes {
			s.decide(id, out.Seq, out.Rejected)
		}
	}
}

func shortIDs(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = shortID(id)
	}
	return out
}

// Coverage sums the foreign windows' coverage of a run by client command
// line.
func Coverage(reports []SeedReport) []ClientCoverage {
	by := map[string]*ClientCoverage{}
	var order []string
	for _, r := range reports {
		for _, c := range r.Clients {
			t := by[c.Client]
			if t == nil {
				t = &ClientCoverage{Client: c.Client, Window: -1, Intents: map[string]int{}, Faults: map[string]int{}}
				by[c.Client] = t
				order = append(order, c.Client)
			}
			for k, n := range c.Intents {
				t.Intents[k] += n
			}
			for k, n := range c.Faults {
				t.Faults[k] += n
			}
		}
	}
	out := make([]ClientCoverage, 0, len(order))
	for _, k := range order {
		out = append(out, *by[k])
	}
	return out
}

// String prints coverage as "intents: a 3, b 1; faults: x 2".
func (c ClientCoverage) String() string {
	list := func(m map[string]int) string {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
		if len(parts) == 0 {
			return "none"
		}
		return strings.Join(parts, ", ")
	}
	return fmt.Sprintf("intents: %s; faults: %s", list(c.Intents), list(c.Faults))
}

func (s *sim) foreignCoverage() []ClientCoverage {
	var out []ClientCoverage
	for _, fw := range s.foreign {
		out = append(out, fw.coverage)
	}
	return out
}
