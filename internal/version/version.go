// Package version is the one place kbkit's release version lives.
// Cutting a release changes Kit here (scripts and the Makefile read it
// with `go run ./cmd/kbkit version --short` or from this file); the
// toolchain's module version of a tagged build must match it.
package version

// Kit is kbkit's semantic version (docs: CHANGELOG.md).
const Kit = "0.1.0"
