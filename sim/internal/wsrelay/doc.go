// Package wsrelay is the plumbing of the simulator's WebSocket proxies
// (the fault proxy in front of foreign clients, the broken servers): the
// relay of a socket's messages and the tracked data events of kb.onPage
// (spec/PROTOCOL.md 4.4), decoded and encoded again.
package wsrelay
