package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/subspace/kbkit/client"
)

// nameFlags are the flags that name what a command checks or acts on: the
// implementation, client or server under test, its tokens, its database,
// workspace, device or page. Given empty (`--impl "$IMPL"` with IMPL unset
// in a CI script) such a flag would silently fall back to a default (the
// reference, the embedded server, a fresh database): a green run of the
// wrong thing. So on every command an empty or blank value is refused.
var nameFlags = map[string]string{
	"impl":            "the implementation under test",
	"client":          "the client under test",
	"server":          "the server under test",
	"token":           "a device token",
	"other-token":     "a device token of another workspace",
	"revoke-token":    "a device token the suite may revoke",
	"restart-command": "the command that restarts the server",
	"restart-url":     "the URL that restarts the server",
	"dsn":             "the database",
	"workspace":       "the workspace",
	"device":          "the device",
	"page":            "the page",
	"topology":        "the Postgres topology",
}

// refuseEmptyNames installs the check on every command of the tree.
func refuseEmptyNames(root *cobra.Command) {
	prev := root.PersistentPreRunE
	root.PersistentPreRunE = func(c *cobra.Command, args []string) error {
		if err := checkNameFlags(c); err != nil {
			fmt.Fprintf(c.ErrOrStderr(), "%s: %v\n", c.CommandPath(), err)
			return exitError{Code: exitErrored}
		}
		if prev != nil {
			return prev(c, args)
		}
		return nil
	}
}

// checkNameFlags is the check of one command: each name flag given on the
// command line has a non-blank value (every value, when repeatable), and
// $KBKIT_URL, when --server would fall back to it, is unset or non-blank.
func checkNameFlags(c *cobra.Command) error {
	var err error
	c.Flags().Visit(func(f *pflag.Flag) {
		what, ok := nameFlags[f.Name]
		if !ok || err != nil {
			return
		}
		values := []string{f.Value.String()}
		if s, ok := f.Value.(pflag.SliceValue); ok {
			values = s.GetSlice()
		}
		for _, v := range values {
			if strings.TrimSpace(v) == "" {
				err = fmt.Errorf("--%s is empty: it names %s (a flag with a default takes it when left out)", f.Name, what)
				return
			}
		}
	})
	if err != nil {
		return err
	}
	f := c.Flags().Lookup("server")
	if f == nil {
		return nil
	}
	server, from := f.Value.String(), "--server"
	if !f.Changed {
		v, set := os.LookupEnv(client.EnvURL)
		if set && strings.TrimSpace(v) == "" {
			return fmt.Errorf("$%s is set but empty: it names the server under test (unset it for the default)", client.EnvURL)
		}
		server, from = strings.TrimSpace(v), "$"+client.EnvURL
	}
	if server != "" {
		if err := client.CheckServerURL(server); err != nil {
			return fmt.Errorf("%s: %v", from, err)
		}
	}
	return nil
}
