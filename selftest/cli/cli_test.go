package cli

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/subspace/kbkit/internal/cliutil"
	"github.com/subspace/kbkit/selftest"
	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/sim"
	"github.com/subspace/kbkit/sim/broken"
)

func TestMain(m *testing.M) { os.Exit(pgprovider.RunTests(m)) }

func atRest(t sim.Target) (sim.Target, func(), error) {
	p := broken.NewProxy(t, broken.AtRest())
	return p, p.Close, nil
}

func kbkitSelftest(t *testing.T, servers selftest.Servers, args ...string) (int, string, string) {
	t.Helper()
	root := cliutil.Mount(nil, NewCommand(servers))
	return cliutil.Execute(context.Background(), root, "", append([]string{"selftest"}, args...)...)
}

// A "broken server" that breaks nothing is a control the kit does not
// catch: selftest says so and exits 1.
func TestMissedControlFails(t *testing.T) {
	servers := selftest.Servers{
		Table:  []selftest.BrokenServer{{Name: "not-broken", Breaks: "nothing"}},
		New:    func(t sim.Target, _ string) (sim.Target, func(), error) { return atRest(t) },
		AtRest: atRest,
	}
	code, out, errOut := kbkitSelftest(t, servers, "--quick", "--parts", "servers", "--seeds", "1", "--only", "^(not-broken|cannot-start)$", "--dsn", pgprovider.ForTest(t))
	if code != cliutil.ExitFailed {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "missed") || !strings.Contains(out, "not-broken") {
		t.Errorf("the report does not name the missed control:\n%s", out)
	}
}

// A control that cannot run is an error (exit 2), never a pass; so are
// bad flags.
func TestControlThatCannotRunIsAnError(t *testing.T) {
	servers := selftest.Servers{
		Table:  []selftest.BrokenServer{{Name: "cannot-start", Breaks: "everything"}},
		New:    func(sim.Target, string) (sim.Target, func(), error) { return nil, nil, errors.New("no proxy today") },
		AtRest: atRest,
	}
	code, out, errOut := kbkitSelftest(t, servers, "--quick", "--parts", "servers", "--seeds", "1", "--only", "^(not-broken|cannot-start)$", "--dsn", pgprovider.ForTest(t))
	if code != cliutil.ExitErrored || !strings.Contains(out, "no proxy today") {
		t.Fatalf("exit %d, want 2 naming the reason\n%s\n%s", code, out, errOut)
	}
	for _, args := range [][]string{{"--parts", "nope"}, {"--protocol", "maybe"}, {"--only", "("}, {"--root", "/"}} {
		if code, _, errOut := kbkitSelftest(t, servers, args...); code != cliutil.ExitErrored || errOut == "" {
			t.Errorf("%v: exit %d (%q), want 2 with a message", args, code, errOut)
		}
	}
}
