// Package version is the one place kbkit's release version lives.
// make cut VERSION=X.Y.Z (scripts/cut.sh) changes Kit here and in its
// copies; between releases Kit is X.Y.Z-dev (CHANGELOG.md, "Versioning").
// Scripts and the Makefile read it with `go run ./cmd/kbkit version
// --short` or from this file; the toolchain's module version of a tagged
// build must match it.
package version

import "strconv"

// Kit is kbkit's semantic version (docs: CHANGELOG.md).
const Kit = "0.1.0"

// Spec is the spec_version of spec/: the version of the rules the kit
// checks (cases, protocol checks, simulator checkers). It goes up whenever
// an implementation conforming to the previous version could fail
// (CHANGELOG.md, "Versioning"); the case files of spec/ declare it.
const Spec = 2

// Commit is the commit the build names when the toolchain recorded no VCS
// stamp (a git worktree, -buildvcs=false): cmd/kbkit sets it from its
// -ldflags "-X main.commit=..." before any command runs. The toolchain's
// vcs.revision wins over it where both exist.
var Commit string

// Line is how reports name the kit: "kbkit 0.1.0 spec_version 2".
func Line() string { return "kbkit " + Kit + " spec_version " + strconv.Itoa(Spec) }
