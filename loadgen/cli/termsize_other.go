//go:build !unix

package cli

import "io"

// termSize reports no size off unix: the console falls back to plain lines.
func termSize(io.Writer) (cols, rows int, ok bool) { return 0, 0, false }
