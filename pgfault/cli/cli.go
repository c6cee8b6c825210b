package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/subspace/kbkit/internal/cliutil"
)

// errored prints "kbkit pg NAME: what" on stderr and is the exit status
// of a run that could not be made (2).
func errored(stderr io.Writer, name string, what ...any) error {
	fmt.Fprintln(stderr, append([]any{"kbkit pg " + name + ":"}, what...)...)
	return cliutil.ExitError{Code: cliutil.ExitErrored}
}

// progress is a pgfault.Config.Logf writing each line on w after the
// seconds since now, with prec decimals.
func progress(w io.Writer, prec int) func(format string, args ...any) {
	start := time.Now()
	return func(format string, args ...any) {
		fmt.Fprintf(w, "%7.*fs %s\n", prec, time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
}

// writeJSON writes v, indented, to path (--json).
func writeJSON(path string, v any) error {
	b, _ := json.MarshalIndent(v, "", "  ")
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
