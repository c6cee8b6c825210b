// Package matrix merges the results of `kbkit spec run --json` for several
// implementations into one results matrix: implementations by suites with
// pass, fail and skip counts, the expected failures each one's
// expectations file allows, every failing case with its diff and input,
// a tier per implementation with a stated threshold, a shields.io endpoint
// badge per implementation, and what changed against an earlier matrix.
//
//	recs, _ := matrix.ReadRecords(f) // a spec run --json file
//	m := matrix.Build([]matrix.Impl{{Name: "node", Records: recs}})
//	m.HTML(w)
package matrix
