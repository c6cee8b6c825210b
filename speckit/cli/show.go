package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/internal/cliutil"
	"github.com/subspace/kbkit/speckit/adapter"
	"github.com/subspace/kbkit/speckit/cases"
)

// showOptions are the flags of `kbkit spec show`.
type showOptions struct {
	request bool
	reply   bool
}

func newShowCmd() *cobra.Command {
	var o showOptions
	cmd := &cobra.Command{
		Use:   "show ID [PATH...]",
		Short: "Print one case's request and the reply the reference gives to it (the expected reply)",
		Long: `Prints the case whose id is ID (from the given case files or directories,
default: the built-in spec): where it is, the adapter request that
` + "`kbkit spec run --impl`" + ` sends for it (one NDJSON line, spec/ADAPTER.md), the reply
kbkit's reference gives to that request (what ` + "`kbkit adapter`" + ` answers: the
whole expected result, every document in canonical form), and the case's
then (the keys a run compares; keys it omits are not checked).

--request prints the request line alone, to pipe into an adapter; --reply
prints the expected reply line alone, to compare with an adapter's.

Exit status: 0 printed, 2 no case has that id, or the case is malformed.`,
		Example: `  kbkit spec show edit-text/replaces-text
  kbkit spec show --request tokenizer/link-simple | node speckit/adapters/node/adapter.mjs
  kbkit spec show --reply planner/rename-title-taken > want.json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := showSpecCase(commandContext(c), o, args[0], args[1:], c.OutOrStdout()); err != nil {
				fmt.Fprintln(c.ErrOrStderr(), "kbkit spec show:", err)
				return cliutil.ExitError{Code: cliutil.ExitErrored}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.request, "request", false, "print only the request line (NDJSON, msg_id 1)")
	f.BoolVar(&o.reply, "reply", false, "print only the reference's reply line (the expected reply)")
	cmd.MarkFlagsMutuallyExclusive("request", "reply")
	return cmd
}

// showSpecCase prints case id of the case files at paths (none: the
// built-in spec).
func showSpecCase(ctx context.Context, o showOptions, id string, paths []string, out io.Writer) error {
	if id == "" {
		return errors.New("the case id is empty")
	}
	all, err := cases.Open(paths...)
	if err != nil {
		return err
	}
	var c *cases.Case
	var near []string
	for i := range all {
		switch {
		case all[i].ID == id:
			c = &all[i]
		case strings.Contains(all[i].ID, id) && len(near) < 5:
			near = append(near, all[i].ID)
		}
	}
	if c == nil {
		if len(near) > 0 {
			return fmt.Errorf("no case has id %q (ids containing it: %s)", id, strings.Join(near, ", "))
		}
		return fmt.Errorf("no case has id %q", id)
	}
	in, err := cases.Input(*c)
	if err != nil {
		return fmt.Errorf("%s: %v", c.ID, err)
	}
	in["msg_id"] = 1
	request, err := json.Marshal(in)
	if err != nil {
		return err
	}
	var reply bytes.Buffer
	if err := adapter.Serve(ctx, bytes.NewReader(append(request, '\n')), &reply, cases.Reference{}); err != nil {
		return err
	}
	replyLine := bytes.TrimSpace(reply.Bytes())
	switch {
	case o.request:
		_, err = fmt.Fprintf(out, "%s\n", request)
		return err
	case o.reply:
		_, err = fmt.Fprintf(out, "%s\n", replyLine)
		return err
	}
	then := map[string]any{}
	for k, v := range c.Then {
		then[k] = v
	}
	if c.Steps != nil {
		then["steps"] = c.Steps
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "# %s (%s, %s:%d)\n", c.ID, c.Suite(), c.File, c.Line)
	if c.Description != "" {
		fmt.Fprintf(&sb, "# %s\n", c.Description)
	}
	fmt.Fprintf(&sb, "request:\n%s\n", request)
	fmt.Fprintf(&sb, "expected reply (the reference, as `kbkit adapter` answers):\n%s\n", replyLine)
	fmt.Fprintf(&sb, "checked (the case's then; a run compares only these keys):\n%s\n", cases.Canon(then))
	_, err = io.WriteString(out, sb.String())
	return err
}
