package adapters

import "embed"

// ExpectationsSchema is expectations.schema.json, the JSON Schema of an
// expectations file (spec/EXPECTATIONS.md).
//
//go:embed expectations.schema.json
var ExpectationsSchema []byte

// Examples are the adapters in other languages that spec/ADAPTER.md links
// to, each with its expectations file, for `kbkit spec export` to write
// beside the spec it vendors.
//
//go:embed node/adapter.mjs node/adapter.d.mts node/expectations.yaml
//go:embed typescript/src/adapter.ts typescript/src/client.ts typescript/package.json typescript/package-lock.json typescript/tsconfig.json typescript/expectations.yaml typescript/.gitignore
var Examples embed.FS
