package cli

import (
	"bufio"
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/subspace/kbkit/internal/version"
	"github.com/subspace/kbkit/sim"
)

// parseRun parses conformance run's flags as the command does (a lone
// --seed is one seed) into the run's options and tokens.
func parseRun(t *testing.T, args []string) (sim.Options, []string) {
	t.Helper()
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	var f conformanceFlags
	addConformanceRunFlags(fs, &f, nil)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	if fs.Changed("seed") && !fs.Changed("seeds") {
		f.seeds = 1
	}
	return f.options(), f.tokens
}

// shellWords splits a command line as a POSIX shell would for the lines
// kbkit prints: words, 'single quotes', and $VARIABLES from env.
func shellWords(t *testing.T, line string, env map[string]string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	in, quoted := false, false
	for i := 0; i < len(line); i++ {
		switch ch := line[i]; {
		case quoted && ch == '\'':
			quoted = false
		case quoted:
			w.WriteByte(ch)
		case ch == '\'':
			quoted, in = true, true
		case ch == ' ':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		case ch == '$':
			j := i + 1
			for j < len(line) && (line[j] == '_' || line[j] >= 'A' && line[j] <= 'Z' || line[j] >= '0' && line[j] <= '9') {
				j++
			}
			v, ok := env[line[i+1:j]]
			if !ok {
				t.Fatalf("%q names $%s, which the test did not set", line, line[i+1:j])
			}
			w.WriteString(v)
			i, in = j-1, true
		case ch == '\\' && i+1 < len(line):
			i++
			w.WriteByte(line[i])
			in = true
		case ch == '"' || ch == '`':
			t.Fatalf("%q: %q is not a character a replay line should need", line, ch)
		default:
			w.WriteByte(ch)
			in = true
		}
	}
	if quoted {
		t.Fatalf("%q: unterminated quote", line)
	}
	if in {
		words = append(words, w.String())
	}
	if len(words) < 3 || strings.Join(words[:3], " ") != "kbkit conformance run" {
		t.Fatalf("%q is not a kbkit conformance run line", line)
	}
	return words[3:]
}

// The replay line names every flag that changes what a seed draws or
// where it runs, tokens as placeholders: parsed back through conformance
// run's own flags (the placeholders set to the tokens) it gives the run's
// options again.
func TestConformanceReplayLineParsesBack(t *testing.T) {
	env := map[string]string{"KBKIT_TOKEN": "kbk_only", "KBKIT_TOKEN_1": "kbk_secret1", "KBKIT_TOKEN_2": "kbk_secret2"}
	for _, args := range [][]string{
		{"--seed", "7", "--faults", "--steps", "50", "--windows", "3", "--server", "http://127.0.0.1:8080/base?x=1&y='2'",
			"--token", "kbk_secret1", "--token", "kbk_secret2", "--echo-timeout", "2s"},
		{"--seed", "3", "--pages", "5", "--devices", "3", "--bursts", "--instances", "3", "--topology", "sync-standby",
			"--broken-server", "reorder", "--seed-timeout", "1m"},
		{"--seed", "1", "--choices", "/tmp/a dir/seed-1.choices.json", "--server", "http://h:1", "--token", "kbk_only"},
		{"--seed", "0"},
	} {
		opts, tokens := parseRun(t, args)
		line := sim.ReplayCommand(opts, opts.Seed)
		t.Logf("%q\n  -> %s", args, line)
		for _, tok := range tokens {
			if strings.Contains(line, tok) {
				t.Errorf("the replay line holds the token %s: %s", tok, line)
			}
		}
		back, backTokens := parseRun(t, shellWords(t, line, env))
		if !reflect.DeepEqual(back, opts) {
			t.Errorf("%s parses to\n  %+v\nthe run had\n  %+v", line, back, opts)
		}
		if !reflect.DeepEqual(backTokens, tokens) {
			t.Errorf("%s: tokens %q, the run had %q", line, backTokens, tokens)
		}
	}
}

// A failing seed's printed replay, run as printed, draws the same seed
// again (the same faults, shape and failing checkers); the run replays
// the deterministic failure twice more (failed 3 of 3), shrinks the seed,
// and the printed replay of the shrunk history (--choices, a file in
// --out) fails the same checker again, in each of its runs. Every output
// offers the same line: the text, JSON ("replay"), JUnit and the timeline
// page.
func TestConformanceRunReplaysAndShrinks(t *testing.T) {
	dir := t.TempDir()
	jsonl, junit := filepath.Join(dir, "run.jsonl"), filepath.Join(dir, "run.xml")
	code, out, errs := kbkit(t, "", "conformance", "run", "--broken-server", "reorder", "--instances", "1", "--seed", "1",
		"--faults", "--steps", "40", "--windows", "3", "--echo-timeout", "1s", "--shrink-budget", "90s",
		"--out", dir, "--html", dir, "--json", jsonl, "--junit", junit)
	if code != exitFailed {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitFailed, out, errs)
	}
	replays := regexp.MustCompile(`(?m)^  replay: (.*)$`).FindAllStringSubmatch(out, -1)
	shrunk := regexp.MustCompile(`(?m)^shrunk seed 1: (\S+) failed again in (\d+) of (\d+) replays`).FindStringSubmatch(out)
	if len(replays) != 2 || shrunk == nil {
		t.Fatalf("want the seed's replay, a shrink and its replay in stdout:\n%s\nstderr:\n%s", out, errs)
	}
	seedLine, shrunkLine, checker := replays[0][1], replays[1][1], shrunk[1]
	t.Logf("seed: %s\nshrunk (%s): %s", seedLine, checker, shrunkLine)
	if !strings.Contains(out, "\nseed 1 FAILED, failed 3 of 3 (faults: ") {
		t.Errorf("the report does not say the seed failed 3 of 3:\n%s", out)
	}
	if m := regexp.MustCompile(`--choices (\S+)`).FindStringSubmatch(shrunkLine); m == nil || filepath.Dir(m[1]) != dir {
		t.Errorf("the shrunk replay's choice file is not in --out %s: %s", dir, shrunkLine)
	}
	for _, want := range []string{"--seed 1 ", "--steps 40 ", "--windows 3 ", "--faults", "--broken-server reorder", "--instances 1", "--echo-timeout 1s"} {
		if !strings.Contains(seedLine, want) {
			t.Errorf("the replay lacks %q: %s", want, seedLine)
		}
	}
	first := readSeedJSON(t, jsonl)
	if first.Replay != seedLine {
		t.Errorf("JSON replay %q, text %q", first.Replay, seedLine)
	}
	if first.Runs != 3 || first.FailedRuns != 3 {
		t.Errorf("JSON runs %d, failed_runs %d; want 3 and 3", first.Runs, first.FailedRuns)
	}
	if first.Shrunk == nil || first.Shrunk.Replay != shrunkLine || first.Shrunk.Checker != checker {
		t.Errorf("the JSON line lacks the shrink (%+v)", first.Shrunk)
	}
	if b, _ := os.ReadFile(junit); !strings.Contains(string(b), "replay: "+seedLine) || !strings.Contains(string(b), shrunkLine) ||
		!strings.Contains(string(b), "failed (failed 3 of 3)") {
		t.Errorf("the JUnit failure lacks the replay lines or the recurrence")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "seed-1.html")); !strings.Contains(string(b), html.EscapeString(seedLine)) {
		t.Errorf("the timeline lacks the replay line")
	}
	page, err := os.ReadFile(filepath.Join(dir, "seed-1-choices.html"))
	if err != nil || !strings.Contains(string(page), html.EscapeString(shrunkLine)) {
		t.Errorf("the shrunk seed's timeline is missing or lacks its replay line (%v)", err)
	}

	// The seed's line as printed (its own outputs elsewhere, no shrink).
	env := map[string]string{}
	again := filepath.Join(dir, "again.jsonl")
	args := append([]string{"conformance", "run"}, shellWords(t, seedLine, env)...)
	code, out, errs = kbkit(t, "", append(args, "--json", again, "--out", t.TempDir(), "--shrink=false")...)
	if code != exitFailed {
		t.Fatalf("the replay: exit %d, want %d\n%s\n%s", code, exitFailed, out, errs)
	}
	second := readSeedJSON(t, again)
	if second.Faults != first.Faults || second.Shape != first.Shape || !reflect.DeepEqual(failing(second), failing(first)) {
		t.Errorf("the replay drew another seed: faults %q / %q, shape %+v / %+v, failing %v / %v",
			second.Faults, first.Faults, second.Shape, first.Shape, failing(second), failing(first))
	}

	// The shrunk history's line as printed.
	out2 := t.TempDir()
	t.Chdir(out2) // a replay line writes Porcupine's pages to the working directory
	code, out, errs = kbkit(t, "", append([]string{"conformance", "run"}, shellWords(t, shrunkLine, env)...)...)
	if code != exitFailed || !checkerFailed(out, checker) || !strings.Contains(out, "FAILED, failed 3 of 3") {
		t.Errorf("the shrunk replay: exit %d, want %d with %s failing 3 of 3\n%s\n%s", code, exitFailed, checker, out, errs)
	}
	if strings.Contains(out, "shrunk seed") {
		t.Errorf("a --choices replay shrank again without --shrink")
	}
}

func readSeedJSON(t *testing.T, path string) sim.SeedReport {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	if !sc.Scan() {
		t.Fatalf("%s: no line", path)
	}
	var r sim.SeedReport
	if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func failing(r sim.SeedReport) []string {
	var out []string
	for _, c := range r.Checks {
		if !c.Passed {
			out = append(out, c.Name)
		}
	}
	return out
}

// checkerFailed reads the summary table: checker's failed column > 0.
func checkerFailed(out, checker string) bool {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(checker) + `\s+\d+\s+\d+\s+([1-9]\d*)`).FindStringSubmatch(out)
	return m != nil
}

// Choice files are per run: two runs into one --out keep each other's
// files (each replay line names its own), and a run without --out writes
// its file into a new directory of its own, never the working directory.
func TestConformanceRunChoiceFilesPerRun(t *testing.T) {
	dir := t.TempDir()
	args := []string{"conformance", "run", "--broken-server", "reorder", "--instances", "1", "--seed", "1",
		"--faults", "--steps", "40", "--windows", "3", "--echo-timeout", "1s", "--shrink-budget", "15s", "--reruns", "0"}
	choiceFile := func(out, errs string) string {
		t.Helper()
		m := regexp.MustCompile(`(?m)^shrunk seed 1: [\s\S]*?^  replay: .* --choices (\S+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no shrunk replay with a choice file:\n%s\nstderr:\n%s", out, errs)
		}
		return m[1]
	}
	_, out, errs := kbkit(t, "", append(args, "--out", dir)...)
	first := choiceFile(out, errs)
	before, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	_, out, errs = kbkit(t, "", append(args, "--out", dir)...)
	second := choiceFile(out, errs)
	if second == first || filepath.Dir(second) != dir {
		t.Errorf("the second run's choice file is %s, the first's %s (--out %s)", second, first, dir)
	}
	if after, err := os.ReadFile(first); err != nil || string(after) != string(before) {
		t.Errorf("the second run changed the first run's choice file %s (%v)", first, err)
	}

	wd := t.TempDir()
	t.Chdir(wd)
	_, out, errs = kbkit(t, "", args...)
	third := choiceFile(out, errs)
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(third)) })
	if rel, err := filepath.Rel(os.TempDir(), third); err != nil || strings.HasPrefix(rel, "..") || filepath.Dir(third) == dir {
		t.Errorf("without --out the choice file is %s, not in a new directory under %s", third, os.TempDir())
	}
	if _, err := sim.ReadChoices(third); err != nil {
		t.Error(err)
	}
	if m, _ := filepath.Glob(filepath.Join(wd, "*.choices.json")); len(m) > 0 {
		t.Errorf("choice files in the working directory: %v", m)
	}
}

// A failure that did not recur under replay is reported as such in the
// text, JSON and JUnit, with the shrink's note.
func TestReportSaysNotReproducible(t *testing.T) {
	rep := sim.SeedReport{Seed: 7, Runs: 3, FailedRuns: 1, Replay: "kbkit conformance run --seed 7",
		Checks:  []sim.CheckResult{{Name: sim.CheckRollback, Detail: "w1 (node a.mjs) still holds rejected command ab12cd34"}},
		History: []string{"0.1s w0 echo 3", "0.2s w1 (node a.mjs) intent edit-text ab12cd34", "0.3s FINDING rollback: w1 (node a.mjs) still holds rejected command ab12cd34"},
		Shrunk:  &sim.ShrinkSummary{Checker: sim.CheckRollback, NotShrunk: "does not recur under replay (failed 1 of 3: not reproducible, timing-dependent); not shrunk"}}
	var b strings.Builder
	summarize(&b, []sim.SeedReport{rep}, time.Second)
	for _, want := range []string{"seed 7 FAILED, failed 1 of 3: not reproducible, timing-dependent (faults: ",
		"history of w1 around its finding (2 events", "0.2s w1 (node a.mjs) intent"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the text lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "w0 echo") {
		t.Errorf("the history shows another window's events:\n%s", b.String())
	}
	dir := t.TempDir()
	jsonl, junit := filepath.Join(dir, "r.jsonl"), filepath.Join(dir, "r.xml")
	if err := writeOutputs(conformanceFlags{jsonOut: jsonl, junit: junit}, nil, []sim.SeedReport{rep}); err != nil {
		t.Fatal(err)
	}
	back := readSeedJSON(t, jsonl)
	if back.Runs != 3 || back.FailedRuns != 1 || back.Shrunk == nil || back.Shrunk.NotShrunk != rep.Shrunk.NotShrunk {
		t.Errorf("the JSON line: runs %d, failed_runs %d, shrunk %+v", back.Runs, back.FailedRuns, back.Shrunk)
	}
	// Both name the kit and the spec_version.
	if line, _ := os.ReadFile(jsonl); !strings.HasPrefix(string(line), `{"kbkit":"`+version.Kit+`","spec_version":`+strconv.Itoa(version.Spec)+`,"seed":7,`) {
		t.Errorf("the JSON line does not begin with the kit and the spec_version:\n%s", line)
	}
	x, _ := os.ReadFile(junit)
	if !strings.Contains(string(x), `<property name="kbkit.spec_version" value="`+strconv.Itoa(version.Spec)+`">`) {
		t.Errorf("the JUnit report has no kbkit.spec_version property:\n%s", x)
	}
	if !strings.Contains(string(x), "rollback failed (failed 1 of 3: not reproducible, timing-dependent)") ||
		!strings.Contains(string(x), "does not recur under replay") {
		t.Errorf("the JUnit report lacks the recurrence or the shrink's note:\n%s", x)
	}
}
