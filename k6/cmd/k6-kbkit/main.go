// Command k6-kbkit is k6 with kbkit's extension (k6/x/kbkit) built in:
// the main that xk6 would generate for it.
package main

import (
	k6cmd "go.k6.io/k6/cmd"

	_ "github.com/subspace/kbkit/k6/kbkit"
)

func main() {
	k6cmd.Execute()
}
