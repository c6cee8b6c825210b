//go:build !unix

package cputime

import "time"

// Supported says whether Self reports this process's CPU time: not on
// this platform, where CPU figures read 0.
const Supported = false

func self() time.Duration { return 0 }
