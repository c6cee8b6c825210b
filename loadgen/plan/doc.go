// Package plan lays out a load run: its pages, which editor holds which
// window, and the ids of the commands that set the pages up, all derived
// from the run id, so that every process of a run (kbkit loadgen shards,
// k6 instances with complementary execution segments) lays out the same
// pages and their editors meet on them.
//
//	p := plan.New("bench1", spec, 200)
//	for _, w := range p.Windows(e) { ... p.PageID(w.Page) ... }
//	err := p.CreatePage(ctx, c, deviceID, 0) // idempotent: a repeat is answered, not redone
package plan
