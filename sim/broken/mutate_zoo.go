package broken

import (
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
)

// The zoo: anomalies published against real sync engines, each
// translated into this protocol (selftest/zoo.go holds the originals and
// their links).

// mutResumeBehind: a server that resumes a subscription opened with
// lastEventId N from N-2, so that after a reconnect the seq goes
// backwards (PowerSync's non-monotonic reads after disconnect/connect).
func mutResumeBehind() Mutation {
	n := new(atomic.Int64)
	return Mutation{fired: n, upstream: func(b []byte) []byte {
		return editInput(b, func(input map[string]json.RawMessage) bool {
			raw, ok := input["lastEventId"]
			if !ok {
				return false
			}
			var s string
			if json.Unmarshal(raw, &s) != nil {
				return false
			}
			last, err := strconv.ParseInt(s, 10, 64)
			if err != nil || last < 3 {
				return false
			}
			n.Add(1)
			input["lastEventId"] = rawJSON(strconv.FormatInt(last-2, 10))
			return true
		})
	}}
}

// editInput applies f to the input of a subscription message
// {"params":{"input":{...}}} and returns the message re-encoded when f
// changed it.
func editInput(b []byte, f func(input map[string]json.RawMessage) bool) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return b
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(m["params"], &params) != nil {
		return b
	}
	var input map[string]json.RawMessage
	if json.Unmarshal(params["input"], &input) != nil || input == nil {
		return b
	}
	if !f(input) {
		return b
	}
	params["input"] = rawJSON(input)
	m["params"] = rawJSON(params)
	return rawJSON(m)
}

// pageAnswers remembers, per page, a kb.page answer served before (its
// body and seq): what a server that reads a lagging replica answers.
type pageAnswers struct {
	mu    sync.Mutex
	old   map[string]pageAnswer // the answer a stale read serves
	flip  map[string]bool       // stale-page: every other call is stale
	plans map[string]bool       // split-plan: pages to answer from before a plan
}

type pageAnswer struct {
	seq  int64
	body []byte
}

func newPageAnswers() *pageAnswers {
	return &pageAnswers{old: map[string]pageAnswer{}, flip: map[string]bool{}, plans: map[string]bool{}}
}

// pageOf reads the page id and seq of a kb.page answer.
func pageOf(body []byte) (string, int64, bool) {
	var env struct {
		Result struct {
			Data struct {
				Seq int64 `json:"seq"`
				Doc struct {
					Page struct {
						ID string `json:"id"`
					} `json:"page"`
				} `json:"doc"`
			} `json:"data"`
		} `json:"result"`
	}
	if json.Unmarshal(body, &env) != nil || env.Result.Data.Doc.Page.ID == "" {
		return "", 0, false
	}
	return env.Result.Data.Doc.Page.ID, env.Result.Data.Seq, true
}

// mutStalePage: a server whose every other kb.page of a page answers the
// snapshot it answered before, consistent but old (ElectricSQL's delayed
// read-your-writes): a device refetches and its acknowledged edit is not
// there.
func mutStalePage() Mutation {
	n := new(atomic.Int64)
	a := newPageAnswers()
	return Mutation{fired: n, response: func(proc string, body []byte) []byte {
		if proc != "kb.page" {
			return body
		}
		page, seq, ok := pageOf(body)
		if !ok {
			return body
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		old, had := a.old[page]
		a.flip[page] = !a.flip[page]
		if had && old.seq < seq && !a.flip[page] {
			n.Add(1)
			return old.body
		}
		a.old[page] = pageAnswer{seq, body}
		return body
	}}
}

// mutSplitPlan: a server that commits a plan's effects one by one
// (ElectricSQL's non-atomic transactions with intermediate reads): once a
// rename-page or merge-page is acknowledged, kb.page of each other page
// answers its snapshot from before the plan (the origin's effect already
// visible) until a command of that page is acknowledged.
func mutSplitPlan() Mutation {
	n := new(atomic.Int64)
	a := newPageAnswers()
	return Mutation{
		fired: n,
		answered: func(cmd, answer []byte) {
			var env struct {
				Type   string `json:"type"`
				PageID string `json:"page_id"`
			}
			if json.Unmarshal(cmd, &env) != nil {
				return
			}
			var ans struct {
				Result struct {
					Data struct {
						Seq       int64 `json:"seq"`
						Duplicate bool  `json:"duplicate"`
					} `json:"data"`
				} `json:"result"`
			}
			if json.Unmarshal(answer, &ans) != nil || ans.Result.Data.Seq == 0 || ans.Result.Data.Duplicate {
				return
			}
			a.mu.Lock()
			defer a.mu.Unlock()
			delete(a.plans, env.PageID) // its own command: the page has caught up
			if env.Type != "rename-page" && env.Type != "merge-page" {
				return
			}
			for page := range a.old {
				if page != env.PageID {
					a.plans[page] = true
				}
			}
		},
		response: func(proc string, body []byte) []byte {
			if proc != "kb.page" {
				return body
			}
			page, seq, ok := pageOf(body)
			if !ok {
				return body
			}
			a.mu.Lock()
			defer a.mu.Unlock()
			old, had := a.old[page]
			if a.plans[page] && had && old.seq < seq {
				n.Add(1)
				return old.body
			}
			a.old[page] = pageAnswer{seq, body}
			return body
		},
	}
}

// mutAckWithoutCommit: a server that acknowledges every seventh edit-text
// with the page's next seq but never commits it (ElectricSQL's lost
// writes): an acknowledged edit that no echo, snapshot or log holds.
func mutAckWithoutCommit() Mutation {
	n := new(atomic.Int64)
	var mu sync.Mutex
	heads := map[string]int64{} // page -> the highest seq answered
	var calls int64
	headOf := func(cmd []byte) (string, string) {
		var env struct {
			Type   string `json:"type"`
			PageID string `json:"page_id"`
		}
		_ = json.Unmarshal(cmd, &env)
		return env.Type, env.PageID
	}
	return Mutation{
		fired: n,
		answered: func(cmd, answer []byte) {
			_, page := headOf(cmd)
			var ans struct {
				Result struct {
					Data struct {
						Seq int64 `json:"seq"`
					} `json:"data"`
				} `json:"result"`
			}
			if json.Unmarshal(answer, &ans) != nil || page == "" {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			heads[page] = max(heads[page], ans.Result.Data.Seq)
		},
		lose: func(body []byte) []byte {
			typ, page := headOf(body)
			mu.Lock()
			defer mu.Unlock()
			if typ != "edit-text" || heads[page] == 0 {
				return nil
			}
			calls++
			if calls%7 != 0 {
				return nil
			}
			n.Add(1)
			heads[page]++
			return []byte(`{"result":{"data":{"seq":` + strconv.FormatInt(heads[page], 10) + `}}}`)
		},
	}
}
