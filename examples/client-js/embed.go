// Package clientjs embeds the JavaScript reference client (spec/ADAPTER.md
// section 7) for `kbkit spec export` to write beside the spec it vendors.
package clientjs

import "embed"

// Files are the client's sources and its package files (not node_modules:
// `npm ci` installs @trpc/client from package-lock.json).
//
//go:embed adapter.mjs window.mjs reducer.mjs package.json package-lock.json
var Files embed.FS
