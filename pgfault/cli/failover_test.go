package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/internal/cliutil"
)

// kbkitPg runs `kbkit pg ARGS...` in process, with this package's
// commands under pg, and returns its exit status and output.
func kbkitPg(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	root := &cobra.Command{Use: "kbkit", SilenceUsage: true, SilenceErrors: true}
	pg := &cobra.Command{Use: "pg"}
	pg.AddCommand(NewFailoverTestCommand(), NewPartitionTestCommand(), NewSoakCommand())
	root.AddCommand(pg)
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(append([]string{"pg"}, args...))
	if err := root.ExecuteContext(context.Background()); err != nil {
		var e cliutil.ExitError
		if errors.As(err, &e) {
			code = e.Code
		} else {
			code = cliutil.ExitErrored
			errb.WriteString(err.Error())
		}
	}
	return code, out.String(), errb.String()
}

// Bad flags of kbkit pg failover-test are refused with a clear error and
// exit 2, before any Postgres starts. (The measurement itself is tested
// in pgfault.)
func TestPgFailoverTestRefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--topology", "single"}, "has no standby"},
		{[]string{"--topology", "triple"}, "unknown topology"},
		{[]string{"--writers", "2", "--shared", "3"}, "3 shared writers of 2"},
		{[]string{"--think", "-1s"}, "must not be negative"},
	} {
		code, out, errs := kbkitPg(t, append([]string{"failover-test"}, c.args...)...)
		if code != cliutil.ExitErrored || !strings.Contains(errs, c.want) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q (want exit 2 and %q)", c.args, code, out, errs, c.want)
		}
	}
}
