// Package release holds the checks of what a kbkit release publishes and
// of the GitHub Action implementers gate on: action.yml against the
// Actions metadata syntax (testdata/action.schema.json) and against the
// script it runs (scripts/action.sh), and the release notes cut from a
// changelog (scripts/release-notes.sh). It has no code of its own: make
// release (scripts/release.sh) and scripts/ci-release.sh build and run the
// release itself.
package release
