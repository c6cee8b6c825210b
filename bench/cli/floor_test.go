package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/internal/cliutil"
)

// envMain, set in the environment, makes the test binary stand in for
// kbkit (`kbkit bench ...` only): each floor's other end runs as this
// executable's `bench floor --child ROLE`.
const envMain = "KBKIT_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envMain) == "1" {
		os.Exit(execute(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Setenv(envMain, "1")
	os.Exit(m.Run())
}

// execute runs `kbkit ARGS...` with this package's command mounted (args
// start with "bench"), as cmd/kbkit would, writing on stdout and stderr;
// an error that carries no exit status is written on stderr.
func execute(args []string, stdout, stderr io.Writer) int {
	root := &cobra.Command{Use: "kbkit", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(NewCommand())
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetArgs(args)
	if err := root.ExecuteContext(context.Background()); err != nil {
		var e cliutil.ExitError
		if errors.As(err, &e) {
			return e.Code
		}
		_, _ = io.WriteString(stderr, err.Error())
		return cliutil.ExitErrored
	}
	return cliutil.ExitOK
}

// kbkit runs the CLI in process.
func kbkit(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = execute(args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestBenchFloor runs every floor briefly, the test binary standing in for
// kbkit as each measurement's other process (TestMain).
func TestBenchFloor(t *testing.T) {
	code, stdout, stderr := kbkit(t, "bench", "floor", "--json",
		"--sockets", "5,50", "--rate", "1000", "--duration", "500ms", "--warmup", "100ms",
		"--fsync-dir", t.TempDir(), "--fsync-duration", "200ms", "--http-rate", "200")
	if code != cliutil.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep floorReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if rep.NumCPU < 1 || len(rep.Loopback) != 2 || rep.Fsync == nil || rep.HTTP == nil || rep.RoundTrip == nil {
		t.Fatalf("report incomplete: %s", stdout)
	}
	for i, want := range []int{5, 50} {
		r := rep.Loopback[i]
		if r.Sockets != want || r.Writes <= 0 || r.USPerWrite <= 0 || r.USPerRead <= 0 {
			t.Errorf("loopback %d: %+v", want, r)
		}
	}
	if rep.Fsync.OpsPerSec <= 0 || rep.HTTP.USPerRequest <= 0 || rep.HTTP.USPerServed <= 0 {
		t.Errorf("fsync %+v, http %+v", rep.Fsync, rep.HTTP)
	}
	if rt := rep.RoundTrip; rt.Size != 64 || rt.RoundTrips <= 0 || rt.USMean <= 0 || rt.USP50 <= 0 || rt.ClientUS <= 0 || rt.ServerUS <= 0 {
		t.Errorf("roundtrip %+v", rt)
	}
	// The text goes to stderr with --json, one line per measurement.
	if n := strings.Count(stderr, "\n"); n != 5 {
		t.Errorf("%d lines on stderr, want 5:\n%s", n, stderr)
	}
}

func TestBenchFloorUnknown(t *testing.T) {
	code, _, stderr := kbkit(t, "bench", "floor", "--floors", "disk")
	if code != cliutil.ExitErrored || !strings.Contains(stderr, `unknown floor "disk"`) {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// loadgen/README.md states the round-trip floor's default message size as
// the flag has it.
func TestDocsStateTheRoundTripSize(t *testing.T) {
	def := newFloorCmd().Flags().Lookup("roundtrip-size").DefValue
	b, err := os.ReadFile("../../loadgen/README.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := "**roundtrip**: " + def + " bytes (`--roundtrip-size`)"; !strings.Contains(string(b), want) {
		t.Fatalf("loadgen/README.md does not say %q", want)
	}
}
