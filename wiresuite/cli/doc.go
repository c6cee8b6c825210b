// Package cli is the wire suite's command, `kbkit conformance protocol`:
// its flags (the server, the tokens from flags or the environment, the
// restart hook), the preflight, the TAP report as checks end, --junit and
// --json. cmd/kbkit mounts NewCommand under `kbkit conformance`.
//
//	kbkit conformance protocol --server http://127.0.0.1:8080 --token kbk_... --junit protocol.xml
//	kbkit conformance protocol --list
package cli
