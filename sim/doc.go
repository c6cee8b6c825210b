// Package sim is kbkit's multi-client simulator, the client and server
// convergence kit behind `kbkit conformance run`: windows on several
// devices edit several pages of a server through the real wire protocol
// while faults are injected, then checkers (Checks, one row each) prove
// convergence, the projection, gapless seqs, rollback of rejections,
// refetch after gaps and per-page linearizability. Foreign clients (any
// program speaking spec/ADAPTER.md section 7) take part beside the kit's
// own windows.
//
// Who uses it: teams writing a server (through `kbkit conformance run
// --server`) or a client (`--client`), and Go users from their own tests:
//
//	target, _ := sim.NewEmbedded(ctx, dsn, sim.EmbeddedOptions{})
//	defer target.Close()
//	sim.Run(t, target, sim.Options{Seeds: 20, Faults: true})
//
// Or against any server speaking spec/PROTOCOL.md:
//
//	target := sim.Remote("http://127.0.0.1:8080", []string{tok1, tok2})
//
// Every run is a pure function of its seed and the server's answers: the
// scheduler sends one command at a time and delivers echoes in the order it
// draws, so a failing seed replays exactly against a deterministic server.
// Every random decision is a recorded choice (choices.go): a run replays
// from a choice list (Options.Choices), and Shrink reduces a failing seed
// to a small history that fails the same checker (shrink.go);
// ReplayCommand is the command line that runs a seed again. Package
// timeline draws a seed's history; package broken holds the deliberately
// broken servers the checkers are proven against.
package sim
