// Package client speaks spec/PROTOCOL.md (tRPC's HTTP and WebSocket wire
// format) to any kbkit server: commands, page snapshots and the kb.onPage
// subscription. It is the transport of the reference client, the simulator
// and the load generator; it decides nothing (the Window does).
//
// It is lean because a load generator runs on it: over plain
// http it posts commands on HTTP/1.1 connections of its own (h1.go) and
// speaks WebSocket itself (ws.go, with internal/wsframe), over https it
// uses net/http and coder/websocket; events are decoded by hand (wire.go,
// with internal/jsonscan), once per page and process (share.go), the
// reflective decoders deciding anything unusual.
//
//	c := client.New("http://127.0.0.1:8080", token)
//	seq, rej, err := c.Command(ctx, env) // err: not decided, retry with the same id
//	sub, err := c.Subscribe(ctx, pageID, lastSeq)
//	ev, err := sub.Next(ctx)
package client
