// Package adapter speaks kbkit's adapter protocol (spec/ADAPTER.md): NDJSON
// over a child process's stdin and stdout, one flat JSON object per line
// with a top-level `type`, requests carrying `msg_id` and replies
// `in_reply_to`. Logs go to stderr.
//
// Start spawns an adapter and returns a Client, which implements cases.Impl
// (and cases.Planner) by sending one request at a time; Serve is the other
// end, used by `kbkit adapter` to serve the reference implementation:
//
//	c, err := adapter.Start(ctx, []string{"node", "adapter.mjs"}, adapter.Options{})
//	...
//	outcome := cases.Check(ctx, c, someCase)
package adapter
