package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// kbkitProcess runs this test binary as kbkit (TestMain) in a process of
// its own, as a CI script would run kbkit.
func kbkitProcess(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), envMain+"=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("kbkit %s: %v", strings.Join(args, " "), err)
	}
	return code, out.String(), errb.String()
}

// groups are the commands of the tree that only group others.
func groups(c *cobra.Command, path []string) [][]string {
	var out [][]string
	if c.HasSubCommands() {
		out = append(out, path)
	}
	for _, sub := range c.Commands() {
		out = append(out, groups(sub, append(append([]string(nil), path...), sub.Name()))...)
	}
	return out
}

// TestUnknownCommandExits2: at every level of the tree a word that is no
// subcommand exits 2 (a typo in a CI script must not go green) and names
// the command; a near miss gets a suggestion. The group alone still
// prints its help and exits 0.
func TestUnknownCommandExits2(t *testing.T) {
	root := newRootCmd()
	all := groups(root, nil)
	if len(all) < 4 {
		t.Fatalf("only %d command groups found: %v", len(all), all)
	}
	for _, path := range all {
		t.Run("kbkit "+strings.Join(path, " "), func(t *testing.T) {
			group, _, err := root.Find(path)
			if err != nil {
				t.Fatal(err)
			}
			sub := group.Commands()[0].Name()
			typo := sub + "x"
			code, out, errs := kbkitProcess(t, append(append([]string(nil), path...), typo)...)
			if code != exitErrored {
				t.Fatalf("kbkit %s %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(path, " "), typo, code, exitErrored, out, errs)
			}
			want := `unknown command "` + typo + `" for "` + group.CommandPath() + `"`
			if !strings.Contains(errs, want) || !strings.Contains(errs, "Did you mean this?\n\t"+sub) {
				t.Errorf("stderr does not say %s with the suggestion %q:\n%s", want, sub, errs)
			}
			code, out, errs = kbkitProcess(t, path...)
			if code != exitOK || !strings.Contains(out, "Available Commands:") {
				t.Errorf("kbkit %s alone: exit %d, want its help and 0\nstdout: %s\nstderr: %s", strings.Join(path, " "), code, out, errs)
			}
		})
	}
}

// TestHelpOfUnknownCommandExits2: `kbkit help` of a word that is no
// command fails as the word itself would; of a command, it prints that
// command's help and exits 0.
func TestHelpOfUnknownCommandExits2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"help", "specx"}, exitErrored, `unknown command "specx" for "kbkit"`},
		{[]string{"help", "spec", "runn"}, exitErrored, `unknown command "runn" for "kbkit spec"`},
		{[]string{"help", "spec", "run"}, exitOK, "--impl"},
		{[]string{"help"}, exitOK, "Available Commands:"},
	} {
		code, out, errs := kbkitProcess(t, tc.args...)
		if code != tc.code || !strings.Contains(out+errs, tc.want) {
			t.Errorf("kbkit %s: exit %d, want %d and %q\nstdout: %s\nstderr: %s", strings.Join(tc.args, " "), code, tc.code, tc.want, out, errs)
		}
	}
}

// TestUnknownFlagNamesTheCommand: an unknown flag exits 2, names the
// subcommand and suggests the nearest flags.
func TestUnknownFlagNamesTheCommand(t *testing.T) {
	for _, c := range []struct {
		args    []string
		command string
		suggest string // "" for none
	}{
		{[]string{"spec", "run", "--imp", "x"}, "kbkit spec run", "--impl"},
		{[]string{"conformance", "run", "--seedz=3"}, "kbkit conformance run", "--seeds"},
		{[]string{"spec", "fuzz", "--zzzzzz"}, "kbkit spec fuzz", ""},
		{[]string{"serve", "--adr", ":0"}, "kbkit serve", "--addr"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, _, errs := kbkitProcess(t, c.args...)
			if code != exitErrored {
				t.Fatalf("exit %d, want %d\n%s", code, exitErrored, errs)
			}
			if !strings.Contains(errs, `for "`+c.command+`"`) {
				t.Errorf("stderr does not name %q:\n%s", c.command, errs)
			}
			if got := strings.Contains(errs, "Did you mean this?"); got != (c.suggest != "") {
				t.Errorf("suggestion given: %v, want %v:\n%s", got, c.suggest != "", errs)
			}
			if c.suggest != "" && !strings.Contains(errs, "\t"+c.suggest+"\n") {
				t.Errorf("stderr does not suggest %s:\n%s", c.suggest, errs)
			}
		})
	}
}
