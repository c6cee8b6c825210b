// Package cli is `kbkit spec` (run, export, show, fuzz, matrix) and
// `kbkit adapter`: the flags of each subcommand and the steps of its run
// over the speckit packages. cmd/kbkit mounts NewSpecCommand and
// NewAdapterCommand; a subcommand's exit status leaves it as a
// cliutil.ExitError.
//
//	kbkit spec run --impl "node speckit/adapters/node/adapter.mjs" \
//	    --expect speckit/adapters/node/expectations.yaml --junit junit.xml
//	kbkit spec show edit-text/replaces-text
//	kbkit spec fuzz --impl "kbkit adapter" --seconds 10
//	kbkit spec matrix --reference --html matrix.html
//	kbkit spec export vendor/kbkit-spec
package cli
