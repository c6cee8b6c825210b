package cputime

import "time"

// Self is this process's user + system CPU time so far; 0 where the
// platform does not report it (see Supported).
func Self() time.Duration { return self() }

// Seconds is Self in seconds.
func Seconds() float64 { return Self().Seconds() }
