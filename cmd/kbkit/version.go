package main

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/internal/version"
	"github.com/subspace/kbkit/speckit/adapter"
)

// versionInfo is what `kbkit version` prints.
type versionInfo struct {
	// Kit is kbkit's version (version.Kit), the one reports carry.
	Kit         string `json:"kbkit"`
	SpecVersion int    `json:"spec_version"`
	// Protocol is the newest adapter protocol the runner speaks; it
	// offers every version from 1 (spec/ADAPTER.md 3, init).
	Protocol int    `json:"adapter_protocol"`
	Module   string `json:"module"`
	// Version is the module version the toolchain recorded: "(devel)"
	// for a build from a checkout, vX.Y.Z for `go install ...@vX.Y.Z`.
	Version    string `json:"version"`
	Commit     string `json:"commit,omitempty"`
	CommitTime string `json:"commit_time,omitempty"`
	Modified   bool   `json:"modified,omitempty"`
	Go         string `json:"go"`
}

// commit is set by the Makefile (-ldflags "-X main.commit=...") for builds
// where the toolchain records no VCS stamp (GOFLAGS=-buildvcs=false, a git
// worktree); the toolchain's own stamp wins when present.
var commit string

// The packages that stamp what they write (spec export's VERSION.json)
// read the commit from internal/version.
func init() { version.Commit = commit }

// buildVersion reads the module version and the VCS stamp that the Go
// toolchain writes into every binary built from a checkout.
func buildVersion() versionInfo {
	bi, _ := debug.ReadBuildInfo()
	return versionOf(bi)
}

// pseudoVersion matches the versions the toolchain derives from a commit
// (v0.0.0-20261202035418-7a81c93dd3a8, v1.2.4-0.2026...-..., +dirty).
var pseudoVersion = regexp.MustCompile(`-(?:[0-9A-Za-z-]+\.)*(?:0\.)?\d{14}-[0-9a-f]{12}(?:\+dirty)?$|\+dirty$`)

// versionOf reads a binary's build information. A build in a checkout
// (it has a vcs.revision) that is not exactly a release tag is "(devel)":
// the toolchain would print a pseudo-version derived from the commit,
// which looks like a release of the module and is not one.
func versionOf(bi *debug.BuildInfo) versionInfo {
	v := versionInfo{Kit: version.Kit, SpecVersion: version.Spec, Protocol: adapter.Protocol,
		Module: "github.com/subspace/kbkit", Version: "(devel)", Go: runtime.Version()}
	v.Commit = commit
	if bi == nil {
		return v
	}
	if bi.Main.Path != "" {
		v.Module = bi.Main.Path
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.CommitTime = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	if v.CommitTime != "" && pseudoVersion.MatchString(v.Version) {
		v.Version = "(devel)"
	}
	return v
}

func newVersionCmd() *cobra.Command {
	var asJSON, short bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print kbkit's version, spec_version, adapter protocol and build",
		Long: `Prints kbkit's version (the one every report carries; CHANGELOG.md says
what each version changed), the spec_version of the rules it checks, the
adapter protocol versions it speaks, then the module version and the
commit this binary was built from (from the build information the Go
toolchain records) and the Go version. A module version "(devel)" means a
build from a checkout rather than "go install module@vX.Y.Z"; the commit
is missing when the binary was built outside a git checkout (or with
-buildvcs=false). --short prints the version alone (scripts and the
Makefile read it so).`,
		Example: `  kbkit version
  kbkit version --short
  kbkit version --json | jq -r .commit`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if short && asJSON {
				return fmt.Errorf("--short and --json: choose one")
			}
			if short {
				_, err := fmt.Fprintln(c.OutOrStdout(), version.Kit)
				return err
			}
			return printVersion(c.OutOrStdout(), buildVersion(), asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.Flags().BoolVar(&short, "short", false, "print kbkit's version alone (X.Y.Z)")
	return cmd
}

func printVersion(w io.Writer, v versionInfo, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(v)
	}
	build := v.Version
	if tag := "v" + v.Kit; build != "(devel)" && build != tag && !strings.HasPrefix(build, tag+"-") {
		build += " (not the tag v" + v.Kit + " this kbkit's version asks for)"
	}
	commit := v.Commit
	switch {
	case commit == "":
		commit = "unknown"
	case v.Modified:
		commit += " (modified)"
	}
	if v.CommitTime != "" {
		commit += " " + v.CommitTime
	}
	_, err := fmt.Fprintf(w, "kbkit %s\n  spec_version  %d\n  adapter       protocol 1 to %d\n  module        %s %s\n  commit        %s\n  go            %s\n",
		v.Kit, v.SpecVersion, v.Protocol, v.Module, build, commit, v.Go)
	return err
}
