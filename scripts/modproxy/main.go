// Command modproxy writes a module proxy directory (GOPROXY=file://DIR)
// holding this checkout as one version of its module, as the Go module
// proxy would serve a tag: DIR/MODULE/@v/{list,VERSION.info,VERSION.mod,
// VERSION.zip}. scripts/ci-release.sh then runs `go install
// MODULE/cmd/kbkit@VERSION` through it, offline, to see what a tagged
// install prints.
//
//	git ls-files -z | go run ./scripts/modproxy -module github.com/subspace/kbkit -version v0.1.0 -out DIR
//
// The zip holds the files named on stdin (NUL-separated, relative to the
// current directory, which must be the module's root) but those of nested
// modules (a directory with a go.mod of its own) and of vendor/.
package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	module := flag.String("module", "", "module path")
	version := flag.String("version", "", "the version to serve, vX.Y.Z")
	out := flag.String("out", "", "the proxy directory to write")
	flag.Parse()
	if *module == "" || !strings.HasPrefix(*version, "v") || *out == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: git ls-files -z | modproxy -module PATH -version vX.Y.Z -out DIR")
		os.Exit(2)
	}
	files, err := readNames(os.Stdin)
	if err == nil {
		err = write(*module, *version, *out, files)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
}

func readNames(r io.Reader) ([]string, error) {
	b, err := io.ReadAll(bufio.NewReader(r))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, n := range bytes.Split(b, []byte{0}) {
		if len(n) > 0 {
			names = append(names, string(n))
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no files on stdin")
	}
	return names, nil
}

// inModule reports whether name belongs to the root module: not under a
// directory with a go.mod of its own, nor under vendor/.
func inModule(name string, nested []string) bool {
	if name == "vendor" || strings.HasPrefix(name, "vendor/") {
		return false
	}
	for _, d := range nested {
		if strings.HasPrefix(name, d+"/") {
			return false
		}
	}
	return true
}

func write(module, version, out string, files []string) error {
	var nested []string
	for _, f := range files {
		if path.Base(f) == "go.mod" && f != "go.mod" {
			nested = append(nested, path.Dir(f))
		}
	}
	dir := filepath.Join(out, filepath.FromSlash(module), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	zf, err := os.Create(filepath.Join(dir, version+".zip"))
	if err != nil {
		return err
	}
	zw := zip.NewWriter(zf)
	n := 0
	for _, f := range files {
		if !inModule(f, nested) {
			continue
		}
		st, err := os.Lstat(f)
		if err != nil {
			return err
		}
		if !st.Mode().IsRegular() { // symbolic links have no place in a module zip
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		w, err := zw.Create(module + "@" + version + "/" + f)
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		n++
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := zf.Close(); err != nil {
		return err
	}
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		return err
	}
	info, _ := json.Marshal(map[string]string{"Version": version, "Time": time.Now().UTC().Format(time.RFC3339)})
	for name, b := range map[string][]byte{version + ".mod": mod, version + ".info": info, "list": []byte(version + "\n")} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "modproxy: %s@%s: %d files in %s\n", module, version, n, dir)
	return nil
}
