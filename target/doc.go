// Package target is a server that the simulator (sim) and the load
// generator (loadgen) drive: its endpoints and paired devices, and what
// faults it can take. Two kinds: Remote, any server speaking
// spec/PROTOCOL.md given by URL and tokens, and Embedded, the reference
// server run in this process (several instances on one database), which
// can also restart an instance, restart its Postgres or fail it over.
//
//	e, _ := target.NewEmbedded(ctx, dsn, target.EmbeddedOptions{Instances: 2})
//	defer e.Close()
//	r := target.Remote("http://127.0.0.1:8080", []string{tok1, tok2})
//	if err := target.Preflight(ctx, r); err != nil { ... } // errors.Is(err, target.ErrCannotRun)
package target
