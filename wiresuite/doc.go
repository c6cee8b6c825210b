// Package wiresuite is kbkit's wire suite, the server kit behind `kbkit
// conformance protocol`: a black-box suite for servers that claim
// spec/PROTOCOL.md. It talks to a running server over HTTP and WebSocket
// with a device token and checks every shape and rule of the protocol one
// by one (success and error envelopes and codes, exactly-once per command
// id, rejections, gapless seqs, lastEventId resume, reconnect, batching,
// the trust boundary, limits).
//
// Who uses it: teams writing a server, from the command line or from Go:
//
//	env := &wiresuite.Env{BaseURL: "http://127.0.0.1:8080", Token: token}
//	if err := env.Preflight(ctx); err != nil { ... } // errors.Is(err, wiresuite.ErrCannotRun)
//	results := wiresuite.Run(ctx, env, wiresuite.Checks(), wiresuite.Options{})
//
// Every check creates its own pages with fresh uuids (and titles), so the
// checks are independent of each other and of anything else the server
// holds; they can be run one by one (Options.Match) and repeatedly against
// the same server.
package wiresuite
