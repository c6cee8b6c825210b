package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/subspace/kbkit/internal/cliutil"
)

// kbkitPg runs `kbkit pg ARGS...` in process, with this package's
// commands under pg, and returns its exit status and output.
func kbkitPg(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	root := cliutil.Mount([]string{"pg"}, NewFailoverTestCommand(), NewPartitionTestCommand(), NewSoakCommand())
	return cliutil.Execute(context.Background(), root, "", append([]string{"pg"}, args...)...)
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
