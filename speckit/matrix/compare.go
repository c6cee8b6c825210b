package matrix

import (
	"sort"

	"github.com/subspace/kbkit/speckit/report"
)

// Change is one difference from an earlier matrix.
type Change struct {
	Impl string `json:"implementation"`
	ID   string `json:"id,omitempty"` // the case; "" for the implementation itself
	Kind string `json:"kind"`
	Was  string `json:"was,omitempty"`
	Now  string `json:"now,omitempty"`
}

// Kinds of change, in the order a reader needs them.
const (
	ChangeNewFailure  = "new failure"  // fails the run now, did not before
	ChangeTier        = "tier"         // the implementation's tier moved
	ChangeNowExpected = "now expected" // passed before, now an expected failure or skip
	ChangeFixed       = "fixed"        // failed the run before, does not now
	ChangeNowPassing  = "now passing"  // was an expected failure or skip, passes now
	ChangeNewCase     = "new case"     // not in the earlier matrix
	ChangeRemovedCase = "removed case" // only in the earlier matrix
	ChangeNewImpl     = "new implementation"
	ChangeRemovedImpl = "removed implementation"
)

var kindOrder = map[string]int{ChangeNewFailure: 0, ChangeTier: 1, ChangeNowExpected: 2, ChangeFixed: 3,
	ChangeNowPassing: 4, ChangeNewCase: 5, ChangeRemovedCase: 6, ChangeNewImpl: 7, ChangeRemovedImpl: 8}

func bad(v report.Verdict) bool {
	return v == report.VerdictFail || v == report.VerdictError || v == report.VerdictUnexpectedPass
}

// Compare records in m.Changes what changed since old (named against):
// new failures first, then tier moves, then the rest.
func (m *Matrix) Compare(old *Matrix, against string) {
	m.Against, m.Changes = against, nil
	before := map[string]Row{}
	for _, r := range old.Rows {
		before[r.Name] = r
	}
	for _, r := range m.Rows {
		o, ok := before[r.Name]
		if !ok {
			m.Changes = append(m.Changes, Change{Impl: r.Name, Kind: ChangeNewImpl, Now: r.Tier})
			continue
		}
		delete(before, r.Name)
		if o.Tier != r.Tier {
			m.Changes = append(m.Changes, Change{Impl: r.Name, Kind: ChangeTier, Was: o.Tier, Now: r.Tier})
		}
		for id, now := range r.Verdicts {
			was, seen := o.Verdicts[id]
			kind := ""
			switch {
			case !seen:
				kind = ChangeNewCase
				if bad(now) {
					kind = ChangeNewFailure
				}
			case was == now:
			case bad(now) && !bad(was):
				kind = ChangeNewFailure
			case bad(was) && !bad(now):
				kind = ChangeFixed
			case was == report.VerdictPass:
				kind = ChangeNowExpected
			case now == report.VerdictPass:
				kind = ChangeNowPassing
			}
			if kind != "" {
				m.Changes = append(m.Changes, Change{Impl: r.Name, ID: id, Kind: kind, Was: string(was), Now: string(now)})
			}
		}
		for id, was := range o.Verdicts {
			if _, ok := r.Verdicts[id]; !ok {
				m.Changes = append(m.Changes, Change{Impl: r.Name, ID: id, Kind: ChangeRemovedCase, Was: string(was)})
			}
		}
	}
	for name, o := range before {
		m.Changes = append(m.Changes, Change{Impl: name, Kind: ChangeRemovedImpl, Was: o.Tier})
	}
	sort.Slice(m.Changes, func(i, j int) bool {
		a, b := m.Changes[i], m.Changes[j]
		if kindOrder[a.Kind] != kindOrder[b.Kind] {
			return kindOrder[a.Kind] < kindOrder[b.Kind]
		}
		if a.Impl != b.Impl {
			return a.Impl < b.Impl
		}
		return a.ID < b.ID
	})
}
