package main

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/internal/version"
	"github.com/subspace/kbkit/speckit/cases"
)

// versionInfo is what `kbkit version` prints.
type versionInfo struct {
	Module      string `json:"module"`
	Version     string `json:"version"`
	Commit      string `json:"commit,omitempty"`
	CommitTime  string `json:"commit_time,omitempty"`
	Modified    bool   `json:"modified,omitempty"`
	SpecVersion int    `json:"spec_version"`
	Go          string `json:"go"`
}

// commit is set by the Makefile (-ldflags "-X main.commit=...") for builds
// where the toolchain records no VCS stamp (GOFLAGS=-buildvcs=false, a git
// worktree); the toolchain's own stamp wins when present.
var commit string

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
	v := versionInfo{Module: "github.com/subspace/kbkit", Version: "(devel)", SpecVersion: cases.SpecVersion, Go: runtime.Version()}
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
		Short: "Print kbkit's module version, commit and spec_version",
		Long: `Prints the module version and the commit this binary was built from
(from the build information the Go toolchain records), the spec_version of
the case files it runs, and the Go version. "(devel)" means a build from a
checkout rather than "go install module@version"; the commit is missing
when the binary was built outside a git checkout (or with -buildvcs=false).
--short prints kbkit's release version alone (X.Y.Z; scripts read it so).`,
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
	cmd.Flags().BoolVar(&short, "short", false, "print kbkit's release version alone (X.Y.Z)")
	return cmd
}

func printVersion(w io.Writer, v versionInfo, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(v)
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
	_, err := fmt.Fprintf(w, "kbkit %s\n  module        %s\n  commit        %s\n  spec_version  %d\n  go            %s\n",
		v.Version, v.Module, commit, v.SpecVersion, v.Go)
	return err
}
