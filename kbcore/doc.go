// Package kbcore is the pure core of kbkit: the canonical page document, the
// command reducer Apply, the per-node index and the client Window.
//
// Nothing in this package performs I/O, reads a clock, starts a goroutine or
// panics: every decision the server or a client makes about a page is a
// function of its inputs here, so any implementation can be checked against
// the YAML cases in spec/.
//
//	doc, _ := kbcore.ParseDoc([]byte(`{"page":{"id":"p1","title":"Budget"},"nodes":[]}`))
//	res := kbcore.Apply(doc, kbcore.Command{ID: "c1", Type: "create-after",
//		Payload: []byte(`{"text":"cash: $610,000"}`)})
//	if res.Rejected != nil { /* res.Rejected.Code is stable, e.g. "node-not-found" */ }
//	doc = res.Doc // the input document is never modified
package kbcore
