package cli

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	clientjs "github.com/subspace/kbkit/examples/client-js"
	"github.com/subspace/kbkit/internal/cliutil"
	"github.com/subspace/kbkit/internal/version"
	"github.com/subspace/kbkit/spec"
	"github.com/subspace/kbkit/speckit/adapter"
	"github.com/subspace/kbkit/speckit/adapters"
)

func newExportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "export DIR",
		Short: "Write the embedded spec (prose, case files, schemas, ADAPTER.md) to a directory",
		Long: `Writes every file of the spec embedded in this binary (the prose, the YAML
case files, the JSON Schemas, ADAPTER.md and EXPECTATIONS.md, the
TypeScript types in types/), the schema of expectations files
(schema/expectations.schema.json) and the adapters the prose links to
(adapters/node, adapters/typescript) into DIR, with the prose's links
pointing at those copies,
creating directories and overwriting files, so that implementations in
other languages can vendor the exact spec they are checked against.
DIR/VERSION.json names the kbkit that exported it, the spec_version and
the commit it was built from (when the build recorded one).`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			n, err := exportSpec(args[0])
			if err != nil {
				fmt.Fprintln(c.ErrOrStderr(), "kbkit spec export:", err)
				return cliutil.ExitError{Code: cliutil.ExitErrored}
			}
			fmt.Fprintf(c.ErrOrStderr(), "kbkit spec export: wrote %d files to %s\n", n, args[0])
			return nil
		},
	}
}

// expectationsSchemaPath is where export writes the expectations schema.
const expectationsSchemaPath = "schema/expectations.schema.json"

// exportSpec writes the export into dir and returns how many files it
// wrote.
func exportSpec(dir string) (int, error) {
	x := &exporter{dir: dir}
	// The spec, its prose's links pointing into the export.
	err := x.copy(spec.FS, "", func(p, data string) string {
		if path.Ext(p) == ".md" {
			return exportLinks.Replace(data)
		}
		return data
	})
	if err != nil {
		return x.n, err
	}
	if _, err := fs.Stat(spec.FS, expectationsSchemaPath); err != nil {
		if err := x.write(expectationsSchemaPath, adapters.ExpectationsSchema); err != nil {
			return x.n, err
		}
	}
	// The adapters the prose links to, under adapters/. In the export the
	// types sit at DIR/types, one level nearer than spec/types is to
	// speckit/adapters.
	err = x.copy(adapters.Examples, exportedAdapters, func(_, data string) string {
		return exportTypeImports.Replace(data)
	})
	if err != nil {
		return x.n, err
	}
	// The reference client the client suite's prose links to.
	if err = x.copy(clientjs.Files, exportedClient, nil); err != nil {
		return x.n, err
	}
	stamp, err := json.MarshalIndent(exportStamp(), "", "  ")
	if err != nil {
		return x.n, err
	}
	return x.n, x.write(exportVersionPath, append(stamp, '\n'))
}

// exportVersionPath is where export names the kit and the spec_version.
const exportVersionPath = "VERSION.json"

// ExportVersion is the content of an export's VERSION.json.
type ExportVersion struct {
	Kit         string `json:"kbkit"`
	SpecVersion int    `json:"spec_version"`
	// Protocol is the adapter protocol version the kit speaks at most
	// (spec/ADAPTER.md 3, init).
	Protocol int `json:"adapter_protocol"`
	// Commit is the commit of the build: the toolchain's VCS revision, else
	// version.Commit (the Makefile's -X main.commit); "" when neither
	// names one.
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified,omitempty"`
}

func exportStamp() ExportVersion {
	v := ExportVersion{Kit: version.Kit, SpecVersion: version.Spec, Protocol: adapter.Protocol, Commit: version.Commit}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	return v
}

// exporter writes files under dir and counts them.
type exporter struct {
	dir string
	n   int
}

// write writes data to the slash-separated name under the directory.
func (x *exporter) write(name string, data []byte) error {
	dst := filepath.Join(x.dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	x.n++
	return os.WriteFile(dst, data, 0o644)
}

// copy writes every file of fsys under prefix, rewritten by rewrite (nil:
// as it is).
func (x *exporter) copy(fsys fs.FS, prefix string, rewrite func(name, data string) string) error {
	return fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		if rewrite != nil {
			data = []byte(rewrite(p, string(data)))
		}
		return x.write(prefix+p, data)
	})
}

// exportedClient is where export writes the JavaScript reference client.
const exportedClient = "examples/client-js/"

// exportedAdapters is where export writes the adapters the prose links to.
const exportedAdapters = "adapters/"

// exportTypeImports points the adapters' imports of spec/types at the
// export's types/.
var exportTypeImports = strings.NewReplacer(
	`"../../../../spec/types/`, `"../../../types/`,
	`"../../../spec/types/`, `"../../types/`,
	`"../../../../examples/client-js/`, `"../../../`+exportedClient,
)

// exportLinks points the prose's links out of spec/ at the copies in the
// export: the expectations schema and the adapters.
var exportLinks = strings.NewReplacer(
	"](../speckit/adapters/expectations.schema.json)", "]("+expectationsSchemaPath+")",
	"](../speckit/adapters/", "]("+exportedAdapters,
	"](../examples/client-js/", "]("+exportedClient,
)
