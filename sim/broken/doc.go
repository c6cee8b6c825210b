// Package broken holds kbkit's deliberately broken servers: proxies in
// front of a target that each break one guarantee of spec/PROTOCOL.md, so
// that a user (kbkit conformance run --broken-server) and the simulator's
// own tests see its checkers, shrinker and timeline catch it. Nothing of
// a correct run depends on them.
package broken
