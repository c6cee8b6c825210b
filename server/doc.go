// Package server is kbkit's reference server: the command model over
// tRPC's HTTP and WebSocket wire format (no transformer), so that an
// unmodified @trpc/client v11 (httpLink, httpBatchLink, wsLink) talks to
// it. spec/PROTOCOL.md is the normative description of the wire.
//
//	POST /trpc/kb.command          envelope -> {"result":{"data":{"seq":N}}}
//	GET  /trpc/kb.page?input=...   {page_id, pending} -> {doc, seq, outcomes}
//	WS   /trpc                     subscription kb.onPage {page_id, lastEventId}
//	                               subscription kb.onInvalidate {topics}
//	GET  /metrics, /healthz
//
// The Server is an http.Handler; the caller listens:
//
//	st, err := store.Open(ctx, dsn)
//	hub := dispatch.New(st)
//	go hub.Run(ctx)
//	srv := server.New(st, hub, server.Options{})
//	hs := &http.Server{Addr: "127.0.0.1:8080", Handler: srv}
//	go hs.ListenAndServe()
//	...
//	srv.Shutdown(ctx) // reconnect to every WebSocket, drain, close them
//	hs.Shutdown(ctx)  // drain HTTP
//
// Package server/instance is that wiring, written once: kbkit serve and
// target.Embedded build their instances with it.
//
// Every request is authenticated by a device's bearer token and checked at
// the trust boundary (body size, JSON Schema of the envelope, device,
// workspace, rate limit) before anything is written. A decided command is
// either committed (seq) or rejected (CONFLICT with the rejection); a
// transient store failure is SERVICE_UNAVAILABLE with data.retryable, never
// a rejection.
package server
