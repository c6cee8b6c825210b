// Package docs holds the tests that keep kbkit's documentation true: every
// page's quick start and the tutorial run as written (run_test.go), every
// relative link and anchor resolves (links_test.go), and the READMEs stay
// manuals and the architecture page names every package (manuals_test.go).
package docs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A runnable page marks each shell block to run with a line
// `<!-- run -->` right before its fence; a fence whose info string names
// a file (```js file=window.mjs) is that file's text, appended in page
// order, so a tutorial builds its files piece by piece as it explains
// them. Blocks without either are shown, not run.
type block struct {
	line int    // the fence's line, 1-based
	lang string // the fence's language
	file string // file=NAME of the info string, if any
	run  bool   // marked <!-- run -->
	body string
}

var fence = regexp.MustCompile("^```([A-Za-z0-9_-]*)\\s*(.*)$")

// blocks returns the fenced blocks of a page.
func blocks(md string) ([]block, error) {
	lines := strings.Split(md, "\n")
	var out []block
	run := false
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if l == "<!-- run -->" {
			run = true
			continue
		}
		m := fence.FindStringSubmatch(lines[i])
		if m == nil {
			if l != "" {
				run = false
			}
			continue
		}
		b := block{line: i + 1, lang: m[1], run: run}
		for _, f := range strings.Fields(m[2]) {
			if name, ok := strings.CutPrefix(f, "file="); ok {
				b.file = name
			}
		}
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, lines[i])
		}
		if i == len(lines) {
			return nil, fmt.Errorf("line %d: the block never ends", b.line)
		}
		b.body = strings.Join(body, "\n") + "\n"
		if b.run && b.lang != "sh" {
			return nil, fmt.Errorf("line %d: <!-- run --> before a %q block: only sh blocks run", b.line, b.lang)
		}
		if b.file != "" && (strings.Contains(b.file, "..") || filepath.IsAbs(b.file)) {
			return nil, fmt.Errorf("line %d: file=%s is outside the page's directory", b.line, b.file)
		}
		out = append(out, b)
		run = false
	}
	return out, nil
}

// script returns the bash script that runs a page: its files written and
// its runnable blocks run in page order, each announced on stderr with
// its line, stopping at the first command that fails. ok is false when the
// page has nothing to run.
func script(page string, bs []block) (s string, ok bool) {
	var b strings.Builder
	b.WriteString("set -eo pipefail\n")
	for _, bl := range bs {
		switch {
		case bl.file != "":
			fmt.Fprintf(&b, "cat >> %q <<'KBKIT_DOC_EOF'\n%sKBKIT_DOC_EOF\n", bl.file, bl.body)
		case bl.run:
			fmt.Fprintf(&b, "echo '== %s:%d' >&2\n%s", page, bl.line, bl.body)
			ok = true
		}
	}
	return b.String(), ok
}

func TestBlocks(t *testing.T) {
	md := "text\n<!-- run -->\n```sh\necho a\n```\n\n```sh\nnot run\n```\n<!-- run -->\n\nprose between\n```sh\nnot run either\n```\n```js file=x.mjs\nlet x;\n```\n"
	bs, err := blocks(md)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 4 || !bs[0].run || bs[1].run || bs[2].run || bs[3].file != "x.mjs" {
		t.Fatalf("blocks: %+v", bs)
	}
	s, ok := script("p.md", bs)
	if !ok || !strings.Contains(s, "echo a\n") || strings.Contains(s, "not run") || !strings.Contains(s, "cat >> \"x.mjs\"") {
		t.Fatalf("script:\n%s", s)
	}
	for _, bad := range []string{"```sh\nno end\n", "<!-- run -->\n```js\nx\n```\n", "```js file=../x\nx\n```\n"} {
		if _, err := blocks(bad); err == nil {
			t.Errorf("no error for %q", bad)
		}
	}
}

// A failing command fails the script: the runner's own check.
func TestScriptStopsAtAFailure(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	bs, _ := blocks("<!-- run -->\n```sh\nfalse\ntouch reached\n```\n")
	s, _ := script("p.md", bs)
	dir := t.TempDir()
	out, err := runScript(t, dir, s, nil)
	if err == nil {
		t.Fatalf("a failing block passed:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "reached")); err == nil {
		t.Fatal("the script went on after a failing command")
	}
}

// runScript runs a page's script with bash in dir, in a process group of
// its own, and ends every process of that group (a server a page started
// in the background, if the page failed before it stopped it) on every
// path: SIGTERM first, so that a server stops its PostgreSQL, then
// SIGKILL. The test's deadline, if any, is the hang detector.
func runScript(t *testing.T, dir, s string, env []string) (string, error) {
	ctx := context.Background()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-30*time.Second))
		defer cancel()
	}
	cmd := exec.Command("bash", "-c", s)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", err
	}
	pgid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = errors.New("the page did not finish before the test's deadline")
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
	}
	endGroup(pgid)
	return out.String(), err
}

// endGroup ends what is left of a process group: SIGTERM, a wait for the
// group to empty, then SIGKILL.
func endGroup(pgid int) {
	if syscall.Kill(-pgid, syscall.SIGTERM) != nil {
		return // nothing left
	}
	for i := 0; i < 100; i++ {
		time.Sleep(100 * time.Millisecond)
		if syscall.Kill(-pgid, 0) != nil {
			return
		}
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// needNode skips a test that needs node and npm when they are missing,
// unless KBKIT_REQUIRE_NODE is set (then it fails), as sim's foreign
// client tests do.
func needNode(t *testing.T) {
	t.Helper()
	for _, c := range []string{"node", "npm"} {
		if _, err := exec.LookPath(c); err != nil {
			if os.Getenv("KBKIT_REQUIRE_NODE") != "" {
				t.Fatalf("%s is not installed but KBKIT_REQUIRE_NODE is set", c)
			}
			t.Skipf("%s is not installed (set KBKIT_REQUIRE_NODE to fail instead)", c)
		}
	}
}

var (
	buildOnce sync.Once
	buildDir  string // removed by TestMain after the tests
	binDir    string
	corePath  string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// tools builds kbkit and the @kbkit/core tarball once for every page: the
// binary into a directory put first on the pages' PATH, the tarball from a
// copy of js/kbcore (so that nothing is written into the checkout) as
// KBKIT_CORE.
func tools(t *testing.T) (env []string) {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kbkit-docs-")
		if err != nil {
			buildErr = err
			return
		}
		buildDir = dir
		binDir = filepath.Join(dir, "bin")
		corePath, buildErr = build(dir)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return []string{"PATH=" + binDir + string(os.PathListSeparator) + os.Getenv("PATH"), "KBKIT_CORE=" + corePath}
}

func build(dir string) (core string, err error) {
	root, err := filepath.Abs("..")
	if err != nil {
		return "", err
	}
	goCmd := func(env []string, args ...string) error {
		c := exec.Command("go", args...)
		c.Dir = root
		c.Env = append(os.Environ(), env...)
		if out, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := goCmd(nil, "build", "-o", filepath.Join(dir, "bin", "kbkit"), "./cmd/kbkit"); err != nil {
		return "", err
	}
	pkg := filepath.Join(dir, "js", "kbcore")
	if err := os.MkdirAll(filepath.Join(dir, "spec", "types"), 0o755); err != nil {
		return "", err
	}
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		return "", err
	}
	for _, f := range []string{"js/kbcore/kbcore.mjs", "js/kbcore/kbcore.d.ts", "js/kbcore/adapter.mjs", "js/kbcore/package.json", "js/kbcore/README.md", "js/kbcore/prepack.mjs", "spec/types/kbkit.d.ts"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			return "", err
		}
	}
	if err := goCmd([]string{"GOOS=wasip1", "GOARCH=wasm"}, "build", "-buildmode=c-shared", "-trimpath", "-ldflags=-s -w",
		"-o", filepath.Join(pkg, "kbcore.wasm"), "./js/kbcore/wasm"); err != nil {
		return "", err
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return "", nil // the pages that need the tarball skip without npm
	}
	c := exec.Command("npm", "pack", "--silent", "--pack-destination", dir)
	c.Dir = pkg
	out, err := c.Output()
	if err != nil {
		return "", fmt.Errorf("npm pack: %v", err)
	}
	return filepath.Join(dir, strings.TrimSpace(string(out))), nil
}

// runPage runs a page's quick start (or the whole tutorial) in a fresh
// directory against a kbkit built from this checkout.
func runPage(t *testing.T, name string) {
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	bs, err := blocks(string(b))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	s, ok := script(name, bs)
	if !ok {
		t.Fatalf("%s has no <!-- run --> block: every page's quick start runs", name)
	}
	if strings.Contains(s, "node ") || strings.Contains(s, "npm ") || strings.Contains(s, "KBKIT_CORE") {
		needNode(t)
	}
	if strings.Contains(s, "jq ") {
		if _, err := exec.LookPath("jq"); err != nil {
			t.Fatalf("%s runs jq, which is not installed: install jq (the page's commands read JSON with it)", name)
		}
	}
	env := tools(t)
	start := time.Now()
	out, err := runScript(t, t.TempDir(), s, env)
	if err != nil {
		t.Fatalf("%s does not run as written: %v\n%s", name, err, out)
	}
	t.Logf("%s ran in %s", name, time.Since(start).Round(time.Second))
}

// userPages are the pages for kbkit's users: each starts with a quick
// start marked to run.
var userPages = []string{"testing-clients.md", "testing-servers.md", "testing-reducers.md", "load-testing.md", "postgres-faults.md", "postgres.md", "ci.md"}

// Every page of docs/ with runnable blocks (every user page has them)
// runs as written, exit status 0 at every command.
func TestQuickStartsRunAsWritten(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range userPages {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), "<!-- run -->") {
			t.Errorf("%s has no quick start marked <!-- run --> (%v)", p, err)
		}
	}
	if testing.Short() {
		t.Skip("-short: the quick starts start servers and PostgreSQL")
	}
	for _, p := range pages {
		b, _ := os.ReadFile(p)
		if p == "tutorial-client-adapter.md" || !strings.Contains(string(b), "<!-- run -->") {
			continue // the tutorial has its own test
		}
		t.Run(strings.TrimSuffix(p, ".md"), func(t *testing.T) {
			t.Parallel()
			runPage(t, p)
		})
	}
}

// The tutorial, from an empty folder to a green conformance run --client.
func TestTutorialRunsAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the tutorial runs the client suite against PostgreSQL")
	}
	runPage(t, "tutorial-client-adapter.md")
}
