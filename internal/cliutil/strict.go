package cliutil

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Strict makes every command of root's tree refuse what it does not know,
// with exit status ExitErrored (an error that is no ExitError):
//
//   - a command that only groups others (kbkit spec, kbkit conformance)
//     given a word that is none of its subcommands: `unknown command
//     "runn" for "kbkit spec"`, with cobra's "Did you mean this?" list.
//     Without it cobra prints the group's help and exits 0, so a typo in a
//     CI script goes green. Given no word, the group still prints its help
//     and exits 0.
//   - an unknown flag: the error names the command and the nearest flags
//     it has.
//
// Call it once the tree is complete; it adds cobra's help and completion
// commands first so that they are held to the same rules.
func Strict(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	root.SetFlagErrorFunc(flagError)
	for _, c := range root.Commands() {
		if c.Name() == "help" {
			c.Run, c.RunE = nil, helpRun(root)
		}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasSubCommands() && !c.Runnable() {
			c.Args = cobra.ArbitraryArgs
			c.RunE = groupRun
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// helpRun is the Run of `help [command]`: the help of the command named,
// or, for a name that is no command, the error an unknown command gets.
func helpRun(root *cobra.Command) func(*cobra.Command, []string) error {
	return func(_ *cobra.Command, args []string) error {
		c, rest, err := root.Find(args)
		if err != nil || c == nil {
			return groupRun(root, args)
		}
		if len(rest) > 0 {
			return groupRun(c, rest)
		}
		c.InitDefaultHelpFlag()
		c.InitDefaultVersionFlag()
		return c.Help()
	}
}

// groupRun is the Run of a command that only groups others.
func groupRun(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return c.Help()
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2
	}
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	return fmt.Errorf("%s\n\nRun '%s --help' for its commands", msg, c.CommandPath())
}

// flagError words a flag parsing error of c: the command, the error, and
// the flags of c nearest to an unknown one.
func flagError(c *cobra.Command, err error) error {
	name := unknownFlag(err.Error())
	if name == "" {
		return fmt.Errorf("%w (%q)", err, c.CommandPath())
	}
	dashes := "--"
	if len(name) == 1 {
		dashes = "-"
	}
	msg := fmt.Sprintf("unknown flag %s%s for %q", dashes, name, c.CommandPath())
	var near []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden || len(name) == 1 {
			return
		}
		limit := 1
		if len(name) >= 4 {
			limit = 2
		}
		if levenshtein(name, f.Name) <= limit || strings.HasPrefix(f.Name, name) || strings.HasPrefix(name, f.Name) {
			near = append(near, "--"+f.Name)
		}
	})
	if len(near) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(near, "\n\t")
	}
	return fmt.Errorf("%s\n\nRun '%s --help' for its flags", msg, c.CommandPath())
}

// unknownFlag is the long name in pflag's "unknown flag: --name" (and
// its "unknown shorthand flag: 'x' in -x"), or "".
func unknownFlag(msg string) string {
	if rest, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		name, _, _ := strings.Cut(rest, "=")
		return name
	}
	if rest, ok := strings.CutPrefix(msg, "unknown shorthand flag: '"); ok {
		name, _, _ := strings.Cut(rest, "'")
		return name
	}
	return ""
}

// levenshtein is the edit distance between a and b (bytes).
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
