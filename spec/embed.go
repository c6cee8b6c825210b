// Package spec embeds kbkit's normative specification: the prose
// (README.md), the YAML case files and the JSON Schemas, so that the kbkit
// binary carries the spec it checks against.
package spec

import "embed"

// FS holds every file of the spec directory that users read or run.
//
//go:embed *.md *.yaml canonical.json commands/*.yaml schema/*.json schema/payload/*.json schema/adapter/*.json types/*.d.ts
var FS embed.FS
