// Command refadapter is `kbkit adapter` without the rest of the CLI: the
// reference implementation over the adapter protocol (spec/ADAPTER.md) on
// stdin and stdout. The fuzzer's tests build it with `go build -overlay`
// to make the altered copies of the reference that `kbkit spec fuzz` must
// tell apart from it.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/subspace/kbkit/speckit/adapter"
	"github.com/subspace/kbkit/speckit/cases"
)

func main() {
	if err := adapter.Serve(context.Background(), os.Stdin, os.Stdout, cases.Reference{}); err != nil {
		fmt.Fprintln(os.Stderr, "refadapter:", err)
		os.Exit(2)
	}
}
