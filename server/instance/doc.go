// Package instance builds one running instance of kbkit's reference
// server from a DSN and options: the store, its dispatch hub, the server
// and the HTTP server serving it on a listener the caller opened. It is
// the one place that wiring is written: `kbkit serve` (server/cli) runs
// one instance, target.Embedded several on one database.
//
//	ln, _ := net.Listen("tcp", "127.0.0.1:0")
//	in, err := instance.Start(ctx, ln, instance.Config{DSN: dsn})
//	...
//	in.Shutdown(ctx) // graceful: WebSockets told to reconnect, HTTP drained
//	// or in.Kill(): a crashed instance, every socket cut
package instance
