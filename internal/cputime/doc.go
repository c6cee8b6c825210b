// Package cputime reads the CPU time (user and system) this process has
// used, for the figures that divide it by work done (ms per command).
package cputime
