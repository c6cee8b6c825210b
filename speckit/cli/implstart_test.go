package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/subspace/kbkit/internal/cliutil"
)

// An --impl whose process cannot start, exits during init or never
// answers init ends spec run and spec fuzz at once with exit 2, the
// adapter's own first stderr line in the error. Real processes; the hang
// case ends by the adapter's init timeout (adapter.InitTimeout), the
// test's deadline only detects a hang of the run itself.
func TestImplThatCannotStartEndsTheRun(t *testing.T) {
	for _, c := range []struct {
		name, impl string
		want       []string
	}{
		{"no such command", "kbkit-no-such-adapter", []string{"starting the adapter", "executable file not found"}},
		{"exits 1 with an error", `sh -c 'echo "impl: no licence" >&2; echo more >&2; exit 1'`,
			[]string{`the adapter's first stderr line: "impl: no licence"`, "exit status 1"}},
		{"never answers init", "sh -c 'echo started >&2; exec sleep 600'", []string{"no reply within", `the adapter's first stderr line: "started"`}},
	} {
		for _, sub := range [][]string{{"spec", "run"}, {"spec", "fuzz", "--count", "10"}} {
			t.Run(c.name+"/"+strings.Join(sub, " "), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // hang detector
				defer cancel()
				var out, errb strings.Builder
				code, err := runKbkit(ctx, append(sub, "--impl", c.impl), strings.NewReader(""), &out, &errb)
				if ctx.Err() != nil {
					t.Fatalf("the run did not end: %v", ctx.Err())
				}
				if err != nil {
					errb.WriteString(err.Error())
				}
				if code != cliutil.ExitErrored {
					t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, cliutil.ExitErrored, out.String(), errb.String())
				}
				for _, w := range c.want {
					if !strings.Contains(errb.String(), w) {
						t.Errorf("stderr does not say %s:\n%s", w, errb.String())
					}
				}
			})
		}
	}
}
