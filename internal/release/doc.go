// Package release holds the checks of what a kbkit release publishes and
// of the GitHub Action implementers gate on: action.yml against the
// Actions metadata syntax (testdata/action.schema.json and SchemaStore's
// testdata/schemastore-github-action.json) and against the
// script it runs (scripts/action.sh), the release notes cut from a
// changelog (scripts/release-notes.sh) and make cut (scripts/cut.sh, run
// on a copy of the checkout). It has no code of its own: make
// release (scripts/release.sh) and scripts/ci-release.sh build and run the
// release itself.
package release
