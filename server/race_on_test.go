//go:build race

package server

// raceEnabled: the race detector is on (it grows stacks and heap).
const raceEnabled = true
