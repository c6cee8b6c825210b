// Package cli is the command line of kbkit's reference server: `kbkit
// serve` (one instance, server/instance, on a database it is given or a
// throwaway local PostgreSQL), `kbkit pg up` (a PostgreSQL for local
// development, server/pgprovider) and `kbkit device pair|revoke` (bearer
// tokens). cmd/kbkit mounts NewServeCommand, NewPgUpCommand and
// NewDeviceCommand.
//
//	kbkit serve --addr 127.0.0.1:0 > server.json
//	kbkit pg up --print-dsn pg.dsn
//	kbkit device pair --workspace acme --dsn "$(cat pg.dsn)"
package cli
