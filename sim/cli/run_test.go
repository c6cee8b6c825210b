package cli

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/subspace/kbkit/internal/version"
	"github.com/subspace/kbkit/sim"
)

// TestConformanceRunHTMLFlags: bad --html, --html-all, --client and
// --broken-server input is refused up front (exit 2) and writes nothing.
// (Mounted in kbkit, a blank --client is refused before the command runs,
// as "--client is empty": cmd/kbkit's TestNameFlagsRefuseEmpty.)
func TestConformanceRunHTMLFlags(t *testing.T) {
	url := fakeServer(t)
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--html-all"}, "--html-all needs --html DIR"},
		{[]string{"--client", " "}, "--client needs a command line"},
		{[]string{"--html", filepath.Join(file, "tl")}, "--html:"},
		{[]string{"--broken-server", "nope"}, `no broken-server variant "nope" (one of ack-seq, ack-without-commit, double-echo, drop-derived, drop-rejected-outcomes, event-id-not-seq, ignore-last-event-id, limits-no-rate-burst, lose-cells, no-answer, no-duplicate-flag, no-own-echo, non-canonical-page, refuse-sockets, renumber, reorder, resume-behind, skip-dedup, split-plan, stale-page, untracked-events)`},
	} {
		args := append([]string{"conformance", "run", "--server", url, "--token", "good", "--seeds", "1"}, tc.args...)
		code, out, errs := kbkit(t, "", args...)
		if code != exitErrored || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q (want %q)\n%s", tc.args, code, errs, tc.want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(file, "tl")); err == nil {
		t.Error("a refused --html made its directory")
	}
}

// TestConformanceRunEndsAgainstAStalledServer: against a server that
// stops echoing (a device's own commands never reach its windows) or
// stops answering kb.command, kbkit conformance run exits 1 within the
// bound its help gives, 2 x --seed-timeout, with the finding on stdout
// and the reason it stopped on stderr. (The embedded reference server
// behind the hidden --broken-server proxy.)
func TestConformanceRunEndsAgainstAStalledServer(t *testing.T) {
	const seedTimeout = 10 * time.Second
	took := regexp.MustCompile(`(?m)^(\d+) seeds in ([^:]+):`)
	for _, tc := range []struct {
		variant, finding string
	}{
		{"no-own-echo", "no echo after seq"},
		{"no-answer", "did not finish within 10s"},
	} {
		t.Run(tc.variant, func(t *testing.T) {
			// A run that overstays its bound by far is interrupted (exit 2,
			// a failure below) rather than left to the test's timeout.
			ctx, cancel := context.WithTimeout(context.Background(), 2*seedTimeout+2*time.Minute)
			defer cancel()
			start := time.Now()
			code, out, errs := kbkitContext(ctx, t, "", "conformance", "run", "--broken-server", tc.variant, "--instances", "1",
				"--seeds", "20", "--echo-timeout", "500ms", "--seed-timeout", seedTimeout.String(), "--out", t.TempDir(), "--shrink=false")
			t.Logf("exit %d after %s", code, time.Since(start).Round(time.Millisecond))
			if code != exitFailed {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitFailed, out, errs)
			}
			m := took.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("no summary line in stdout:\n%s", out)
			}
			d, err := time.ParseDuration(m[2])
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s seeds ran in %s", m[1], d)
			if d > 2*seedTimeout {
				t.Errorf("the run took %s, more than 2 x --seed-timeout (%s)", d, 2*seedTimeout)
			}
			if m[1] == "20" {
				t.Errorf("all 20 seeds ran: the first stalled seed should have stopped the run")
			}
			if !strings.Contains(out, tc.finding) || !strings.Contains(out, "protocol:") {
				t.Errorf("stdout lacks the protocol finding %q:\n%s", tc.finding, out)
			}
			if !strings.Contains(errs, "kbkit conformance run: stopped after seed ") {
				t.Errorf("stderr does not say why the run stopped:\n%s", errs)
			}
		})
	}
}

// TestConformanceRunStrict: a checker that no seed gave anything to check
// (without --faults: no dropped echo for refetch, no retry for dedup) is
// named on stderr and passes; with --strict it fails the run (exit 1).
func TestConformanceRunStrict(t *testing.T) {
	args := []string{"conformance", "run", "--seeds", "1", "--steps", "20", "--instances", "1", "--out", t.TempDir()}
	code, out, errs := kbkit(t, "", args...)
	const skipped = "kbkit conformance run: skipped (no seed gave them anything to check): "
	if code != exitOK || !strings.Contains(errs, skipped) || !strings.Contains(errs, "refetch") || !strings.Contains(errs, "dedup") {
		t.Fatalf("without --strict: exit %d, want %d with refetch and dedup named as skipped\nstdout:\n%s\nstderr:\n%s", code, exitOK, out, errs)
	}
	// The table agrees with stderr: a skipped checker is counted as
	// skipped, not as passed.
	for _, name := range []string{"refetch", "dedup"} {
		if !regexp.MustCompile(`(?m)^` + name + `\s+0\s+1\s+0\s+0 [a-z ]+$`).MatchString(out) {
			t.Errorf("the table does not count %s as skipped (passed 0, skipped 1, failed 0):\n%s", name, out)
		}
	}
	// --html when every seed passed says so, pointing at --html-all.
	html := filepath.Join(t.TempDir(), "tl")
	code, _, errs = kbkit(t, "", append(args, "--html", html)...)
	if code != exitOK || !strings.Contains(errs, "--html "+html+": every seed passed, so no timeline was written (--html-all writes one of every seed)") {
		t.Errorf("--html with every seed passing: exit %d, stderr lacks the note:\n%s", code, errs)
	}
	code, out, errs = kbkit(t, "", append(args, "--strict")...)
	if code != exitFailed || !strings.Contains(errs, skipped) {
		t.Errorf("--strict: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitFailed, out, errs)
	}
}

// TestSummarizeCountsSkipped: the table's columns are passed, skipped,
// failed and the evidence (summed over the seeds, in the checker's unit),
// and a vacuous pass is in the skipped one.
func TestSummarizeCountsSkipped(t *testing.T) {
	reports := []sim.SeedReport{
		{Seed: 1, Checks: []sim.CheckResult{{Name: "refetch", Passed: true, Skipped: true}, {Name: "gapless", Passed: true, Evidence: 7}}},
		{Seed: 2, Checks: []sim.CheckResult{{Name: "refetch", Passed: true, Evidence: 2}, {Name: "gapless", Passed: false, Detail: "hole", Evidence: 5}}},
	}
	var b strings.Builder
	summarize(&b, reports, time.Second)
	for _, want := range []string{
		version.Line() + "\n",
		"checker          passed skipped failed  evidence                     failing seeds\n",
		"refetch               1       1      0  2 gaps                       \n",
		"gapless               1       0      1  12 events                    2\n",
		"rollback              0       0      0  0 rejections                 \n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

// TestPorcupineDir: Porcupine's pages go with the run's other outputs.
func TestPorcupineDir(t *testing.T) {
	for _, tc := range []struct {
		f    conformanceFlags
		want string
	}{
		{conformanceFlags{}, "."},
		{conformanceFlags{outDir: "p", htmlDir: "h"}, "p"},
		{conformanceFlags{htmlDir: "h", junit: "j/x.xml"}, "h"},
		{conformanceFlags{junit: "j/x.xml", jsonOut: "k/y.json"}, "j"},
		{conformanceFlags{jsonOut: "k/y.json"}, "k"},
		{conformanceFlags{jsonOut: "-"}, "."},
	} {
		if got := porcupineDir(tc.f); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.f, got, tc.want)
		}
	}
}
