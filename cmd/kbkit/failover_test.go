package main

import (
	"strings"
	"testing"
)

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
		code, out, errs := kbkit(t, "", append([]string{"pg", "failover-test"}, c.args...)...)
		if code != exitErrored || !strings.Contains(errs, c.want) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q (want exit 2 and %q)", c.args, code, out, errs, c.want)
		}
	}
}
