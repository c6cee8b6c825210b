// Package pglisten is the server's one Postgres LISTEN connection: every
// channel a kbkit process listens on (committed commands, revocations,
// pairings) shares it. A handler per channel is told each notification,
// and asked for its backlog after every (re)connect, once its channel is
// listened on: what was committed while no connection listened is read
// there. The connection is pinged while idle, so that a partition from
// Postgres (packets dropped) is noticed within PingEvery + PingTimeout,
// and is opened again with backoff when it is lost.
package pglisten
