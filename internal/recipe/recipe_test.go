package recipe

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/subspace/kbkit/internal/procs"
)

// The recipe's edits for set-collapsed {node, collapsed: bool}, a type
// that adds node state: testdata/set-collapsed.patch (made with git diff
// from a tree where the type was added by docs/adding-a-command.md, the
// outputs of go generate left out: the test runs it). When a file the
// patch touches changes so that the patch no longer applies, add the type
// again by the recipe and write the patch anew (and the recipe, if a step
// changed).
const patchFile = "testdata/set-collapsed.patch"

// generated are the files go generate ./spec/schema writes (recipe step
// "go generate"); the doc must name them too.
var generated = []string{"spec/schema/common.schema.json", "spec/schema/adapter/defs.schema.json", "spec/types/kbkit.d.ts"}

// storage are the patch's files of the recipe's server storage step:
// without them the server drops the new field.
var storage = []string{"server/store/rows.go", "server/store/store.go"}

// checkPasses runs the type's protocol check against the reference server
// (the wiresuite package's own Postgres), through wiresuite's exported
// API only; written into the copy's wiresuite.
const checkPasses = `package wiresuite_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/sim"
	"github.com/subspace/kbkit/wiresuite"
)

// Written by internal/recipe's TestThrowawayType into its copy.
func TestThrowawayCheckPasses(t *testing.T) {
	ctx := context.Background()
	e, err := sim.NewEmbedded(ctx, pgprovider.ForTest(t), sim.EmbeddedOptions{Instances: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	tok, err := e.Devices(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	env := &wiresuite.Env{BaseURL: e.Endpoints()[0], Token: tok[0]}
	if err := env.Preflight(ctx); err != nil {
		t.Fatal(err)
	}
	rs := wiresuite.Run(ctx, env, wiresuite.Checks(), wiresuite.Options{Match: regexp.MustCompile("^protocol/command-set-collapsed$"), Timeout: 5 * time.Minute})
	if len(rs) != 1 {
		t.Fatalf("%d checks match protocol/command-set-collapsed, want 1", len(rs))
	}
	if r := rs[0]; r.Status != wiresuite.Pass {
		t.Fatalf("%s: %s: %s\n  expected: %s\n  got: %s", r.ID, r.Status, r.Message, r.Expected, r.Got)
	}
}
`

// TestThrowawayType adds set-collapsed to a copy of the module by the
// recipe and shows that the type then works end to end: spec run passes
// its YAML cases (and the inverse laws hold on them), its protocol check
// passes against the reference server and fails against one that garbles
// the type, every per-type table has it (fuzz generator, wasm generator,
// broken-server alteration, schemas, TypeScript types), and a short
// conformance run sends it and passes. Then it leaves out one step, the
// server's storage, and shows the conformance run's projection check
// failing: the recipe's steps are each needed.
func TestThrowawayType(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: TestThrowawayType builds kbkit twice in copies of the module and runs Postgres-backed checks (minutes of CPU the first time)")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the processes the test starts are ended through /proc (internal/procs): Linux only")
	}
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Fatal("git applies the recipe's patch and is not installed")
	}
	root := moduleRoot(t)
	patch, err := filepath.Abs(patchFile)
	if err != nil {
		t.Fatal(err)
	}
	files := patchedFiles(t, patch)
	walkDoc(t, root, append(append([]string(nil), files...), generated...))

	// Every process the test starts gets TMPDIR=scratch, so that whatever
	// they leave running (a Postgres of theirs) is found there and ended.
	scratch, err := os.MkdirTemp("", "kbr")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(scratch, 0o755); err != nil { // Postgres runs as another user under root
		t.Fatal(err)
	}
	t.Cleanup(func() {
		endLeftovers(t, scratch)
		os.RemoveAll(scratch)
	})
	r := &runner{t: t, scratch: scratch}

	t.Run("recipe", func(t *testing.T) {
		r := r.with(t)
		dir := copyModule(t, root, filepath.Join(scratch, "full"))
		r.apply(dir, gitBin, "apply", "-C1", patch)
		r.must(dir, "go", "generate", "./spec/schema")
		kbkit := filepath.Join(dir, "kbkit-bin")
		r.must(dir, "go", "build", "-o", kbkit, "./cmd/kbkit")

		out := r.must(dir, kbkit, "spec", "run", "--run", "^set-collapsed/")
		if n := len(regexp.MustCompile(`(?m)^ok \d+ - set-collapsed/`).FindAllString(out, -1)); n != 5 {
			t.Errorf("spec run --run ^set-collapsed/ passed %d cases, want the patch's 5:\n%s", n, out)
		}
		r.must(dir, kbkit, "spec", "run")
		// The new row's requirement id is tagged and its cases cover it.
		out = r.must(dir, kbkit, "spec", "coverage")
		if !regexp.MustCompile(`(?m)^model\.command\.set-collapsed MUST .*\n.*set-collapsed/`).MatchString(out) {
			t.Errorf("spec coverage does not list model.command.set-collapsed covered by the set-collapsed cases:\n%s", out)
		}

		if err := os.WriteFile(filepath.Join(dir, "wiresuite", "throwaway_test.go"), []byte(checkPasses), 0o644); err != nil {
			t.Fatal(err)
		}
		r.must(dir, "go", "test", "-count=1", "-timeout=15m",
			"-run", "^(TestThrowawayCheckPasses|TestOneCommandCheckPerType|TestAlterationPerType|TestBrokenCommandPerType)$", "./wiresuite/")
		r.must(dir, "go", "test", "-count=1", "-timeout=15m", "./kbcore/", "./spec/schema/")
		r.must(dir, "go", "test", "-count=1", "-timeout=15m", "-run", "PerType", "./speckit/fuzz/", "./js/kbcore/wasm/")

		out = r.must(dir, kbkit, "conformance", "run", "--seeds", "2")
		if n := sentOf(out, "set-collapsed"); n == 0 {
			t.Errorf("conformance run sent no set-collapsed (sim/draw.go):\n%s", out)
		}

		// The example client (examples/client-js) folds the type and
		// keeps the node state: its windows converge under faults.
		if nm := filepath.Join(root, "examples", "client-js", "node_modules"); hasNode(nm) {
			if err := os.Symlink(nm, filepath.Join(dir, "examples", "client-js", "node_modules")); err != nil {
				t.Fatal(err)
			}
			out = r.must(dir, "go", "test", "-count=1", "-timeout=15m", "-v", "-run", "^TestForeignClientPasses$", "./sim/")
			if !strings.Contains(out, "--- PASS: TestForeignClientPasses") {
				t.Errorf("TestForeignClientPasses did not run:\n%s", out)
			}
		} else if os.Getenv("KBKIT_REQUIRE_NODE") != "" {
			t.Errorf("the example client's step cannot run: no node, or no %s (npm ci there), but KBKIT_REQUIRE_NODE is set", nm)
		} else {
			t.Logf("the example client's step is not run: no node, or no %s (npm ci there; set KBKIT_REQUIRE_NODE to fail instead)", nm)
		}
	})

	t.Run("without-server-storage", func(t *testing.T) {
		r := r.with(t)
		dir := copyModule(t, root, filepath.Join(scratch, "nostore"))
		args := []string{"apply", "-C1"}
		for _, f := range storage {
			args = append(args, "--exclude="+f)
		}
		r.apply(dir, gitBin, append(args, patch)...)
		r.must(dir, "go", "generate", "./spec/schema")
		kbkit := filepath.Join(dir, "kbkit-bin")
		r.must(dir, "go", "build", "-o", kbkit, "./cmd/kbkit")
		out, code := r.run(dir, kbkit, "conformance", "run", "--seeds", "2")
		if code != 1 || !regexp.MustCompile(`(?m)^projection\s+\d+\s+\d+\s+[1-9]`).MatchString(out) {
			t.Errorf("conformance run with a server that does not store collapsed: exit %d, want 1 with projection failing:\n%s", code, out)
		}
	})
}

// hasNode reports whether node and the example client's node_modules are
// there.
func hasNode(nodeModules string) bool {
	if _, err := exec.LookPath("node"); err != nil {
		return false
	}
	_, err := os.Stat(nodeModules)
	return err == nil
}

// walkDoc holds docs/adding-a-command.md to the patch: every file the
// recipe edits (or go generate writes) is named in it, in backquotes.
func walkDoc(t *testing.T, root string, files []string) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "adding-a-command.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := f
		// The type's own new files are named by pattern.
		name = strings.ReplaceAll(name, "set-collapsed", "<type>")
		name = regexp.MustCompile(`migrations/\d{4}_[a-z_]+\.sql`).ReplaceAllString(name, "migrations/NNNN_<name>.sql")
		if !bytes.Contains(doc, []byte("`"+name+"`")) {
			t.Errorf("docs/adding-a-command.md does not name `%s`, which the recipe's patch edits", name)
		}
	}
}

// patchedFiles lists the files the patch touches.
func patchedFiles(t *testing.T, patch string) []string {
	t.Helper()
	b, err := os.ReadFile(patch)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^diff --git a/(\S+) b/`).FindAllSubmatch(b, -1) {
		out = append(out, string(m[1]))
	}
	if len(out) == 0 {
		t.Fatalf("%s touches no file", patch)
	}
	return out
}

// sentOf is how many commands of typ conformance run's "sent by type"
// line counts.
func sentOf(out, typ string) int {
	m := regexp.MustCompile(`(?m)^sent by type:.*\b` + regexp.QuoteMeta(typ) + ` (\d+)`).FindStringSubmatch(out)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// moduleRoot is the directory of go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", root, err)
	}
	return root
}

// copyModule copies the module's source tree to dst: the files git lists
// (tracked, and untracked but not ignored: so not .git, node_modules or
// build outputs), or, outside a git checkout, every file but those.
func copyModule(t *testing.T, root, dst string) string {
	t.Helper()
	var files []string
	if out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output(); err == nil {
		for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
			files = append(files, filepath.FromSlash(f))
		}
	} else {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			switch {
			case d.Name() == ".git" || d.Name() == "node_modules" || rel == "bin" || rel == "out":
				if d.IsDir() {
					return filepath.SkipDir
				}
			case d.Type().IsRegular() && !strings.HasSuffix(d.Name(), ".test") && rel != "kbkit":
				files = append(files, rel)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, rel := range files {
		src := filepath.Join(root, rel)
		info, err := os.Lstat(src)
		if os.IsNotExist(err) {
			continue // tracked, deleted in the work tree
		}
		if err != nil {
			t.Fatal(err)
		}
		if !info.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, rel), b, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dst, "go.mod")); err != nil {
		t.Fatalf("the copy of %s has no go.mod: %v", root, err)
	}
	return dst
}

// runner runs the test's processes: each in a process group of its own,
// with TMPDIR=scratch and -trimpath (so the copies share the build cache:
// a package of the copy that the patch does not change is compiled once),
// and a hang detector that ends the whole tree.
type runner struct {
	t       *testing.T
	scratch string
}

func (r *runner) with(t *testing.T) *runner { return &runner{t: t, scratch: r.scratch} }

// hang is the hang detector of one process: far above what any step
// takes, only there so that a wedged child cannot hold the test forever.
const hang = 20 * time.Minute

// run runs name args in dir and returns its combined output and exit code.
func (r *runner) run(dir, name string, args ...string) (string, int) {
	t := r.t
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = []string{"TMPDIR=" + r.scratch, "GOFLAGS=-trimpath " + os.Getenv("GOFLAGS")}
	for _, kv := range os.Environ() {
		// The children run against their own embedded server.
		if k, _, _ := strings.Cut(kv, "="); k != "TMPDIR" && k != "GOFLAGS" && k != "KBKIT_URL" && k != "KBKIT_TOKEN" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	procs.OwnGroup(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(hang):
		procs.KillTree(cmd.Process.Pid)
		<-done
		t.Fatalf("%s %s: still running after %v, ended:\n%s", name, strings.Join(args, " "), hang, out.String())
	}
	endLeftovers(t, r.scratch)
	line := fmt.Sprintf("$ %s %s", filepath.Base(name), strings.Join(args, " "))
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Logf("%s: exit %d", line, ee.ExitCode())
			return out.String(), ee.ExitCode()
		}
		t.Fatalf("%s: %v", line, err)
	}
	t.Logf("%s: exit 0", line)
	return out.String(), 0
}

// must is run, failing the test unless the process exits 0.
func (r *runner) must(dir, name string, args ...string) string {
	r.t.Helper()
	out, code := r.run(dir, name, args...)
	if code != 0 {
		r.t.Fatalf("%s %s: exit %d:\n%s", filepath.Base(name), strings.Join(args, " "), code, out)
	}
	return out
}

// apply applies the recipe's patch with git apply.
func (r *runner) apply(dir, gitBin string, args ...string) {
	r.t.Helper()
	if out, code := r.run(dir, gitBin, args...); code != 0 {
		r.t.Fatalf("the recipe's patch (%s) no longer applies to this tree: add set-collapsed again by docs/adding-a-command.md "+
			"in a clean tree, then write the patch anew with git diff (git add -N the new files; leave out what go generate writes):\n%s", patchFile, out)
	}
}

// endLeftovers ends whatever still runs in or on scratch once the process
// that started it has exited, and fails the test: each of kbkit's
// commands and tests must end what it starts.
func endLeftovers(t *testing.T, scratch string) {
	t.Helper()
	left, err := procs.Under(scratch)
	if err != nil {
		t.Errorf("cannot list the processes left in %s: %v", scratch, err)
		return
	}
	for _, p := range left {
		t.Errorf("left running, ended now: %s", p)
		procs.KillTree(p.PID)
	}
}
