package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/internal/cliutil"
)

const (
	exitOK      = cliutil.ExitOK
	exitFailed  = cliutil.ExitFailed
	exitErrored = cliutil.ExitErrored
)

// kbkit runs `kbkit conformance protocol` in process, mounted as
// cmd/kbkit mounts it, and returns its exit status and output.
func kbkit(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	root := &cobra.Command{Use: "kbkit", SilenceUsage: true, SilenceErrors: true}
	conformance := &cobra.Command{Use: "conformance"}
	conformance.AddCommand(NewCommand())
	root.AddCommand(conformance)
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	if err := root.ExecuteContext(context.Background()); err != nil {
		if e, ok := err.(cliutil.ExitError); ok {
			code = e.Code
		} else {
			code = exitErrored
			errb.WriteString(err.Error())
		}
	}
	return code, out.String(), errb.String()
}
