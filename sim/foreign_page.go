package sim

import (
	"fmt"

	"github.com/subspace/kbkit/kbcore"
)

// Page operations as intents of a foreign window (spec/ADAPTER.md section
// 7): drawn only for a client that declared one of them, so that a client
// that declares none, and a run without clients, draw as before.

// drawPageIntent draws, one time in 8, a page operation fw's client
// declared, as pageOp (sim.go) draws one for a reference window: a new
// title, new aliases, or a merge into another page of the seed. A merged
// page gets none. Undoing a merge (undo issues restore-page) is the
// client's undo intent.
//
// Which operation: the one given least so far in the run, so that every
// declared one is exercised early rather than by luck; on a tie a merge
// comes last (it ends the page's operations), the others in seeded order.
func (s *sim) drawPageIntent(fw *foreignWin) (kbcore.Command, bool) {
	var declared []string
	for _, t := range []string{kbcore.TypeRenamePage, kbcore.TypeSetAliases, kbcore.TypeMergePage} {
		if fw.intents[t] && (t != kbcore.TypeMergePage || len(s.pages) > 1) {
			declared = append(declared, t)
		}
	}
	if len(declared) == 0 || s.merged[fw.page] || s.rng.IntN(8) != 0 {
		return kbcore.Command{}, false
	}
	var p map[string]any
	r := s.rng.IntN(len(declared))
	t := declared[r]
	for i := 1; i < len(declared); i++ {
		d := declared[(r+i)%len(declared)]
		if n, m := s.intentsGiven[d], s.intentsGiven[t]; n < m || (n == m && t == kbcore.TypeMergePage) {
			t = d
		}
	}
	switch t {
	case kbcore.TypeRenamePage:
		p = map[string]any{"title": fmt.Sprintf("S%d-%s P%d r%d", s.seed, s.nonce, fw.page, s.idSeq)}
	case kbcore.TypeSetAliases:
		aliases := []string{}
		for n := s.rng.IntN(3); n > 0; n-- {
			aliases = append(aliases, fmt.Sprintf("S%d-%s P%d a%d", s.seed, s.nonce, fw.page, s.idSeq+n))
		}
		p = map[string]any{"aliases": aliases}
	default:
		into := (fw.page + 1 + s.rng.IntN(len(s.pages)-1)) % len(s.pages)
		if s.merged[into] {
			return kbcore.Command{}, false
		}
		p = map[string]any{"into": s.pages[into]}
	}
	s.intentsGiven[t]++
	return kbcore.Command{ID: s.newID(), Type: t, Payload: mustJSON(p)}, true
}
