// Package gcfloor keeps the Go garbage collector's heap goal at least a
// fixed amount above the live heap, for processes whose live heap is small
// and whose allocation rate is high (kbkit serve under load; the load
// generator sets GOGC=400 instead): with GOGC=100, a goal of twice a
// small live heap is reached many times a second at a high allocation
// rate, and the collector's marking (much of it on "idle" processors
// that, on a machine shared with PostgreSQL, are not idle) costs a
// sizeable share of its CPU. With a floor, the goal is max(live × (1 + GOGC/100), live + floor):
// a process with a large live heap (many idle windows) collects as GOGC
// alone says, and memory grows by at most the floor.
//
// The goal is adjusted after every collection (a finalizer re-armed each
// cycle reads /gc/heap/live:bytes and sets the GC percent that gives the
// goal). A GOGC or GOMEMLIMIT in the environment is the user's choice and
// turns the floor off.
package gcfloor
