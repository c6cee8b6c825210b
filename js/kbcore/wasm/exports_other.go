//go:build !wasip1 && !js

package main

import (
	"fmt"
	"os"
)

// On other platforms the package only builds (go vet, go test run its
// calls natively); the module itself is GOOS=wasip1 GOARCH=wasm.
func main() {
	fmt.Fprintln(os.Stderr, "kbcore wasm: build with GOOS=wasip1 GOARCH=wasm -buildmode=c-shared (make wasm)")
	os.Exit(2)
}
