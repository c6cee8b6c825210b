// Package schema validates kbkit JSON against the JSON Schemas (draft
// 2020-12) in spec/schema: the wire command envelope, the per-type command
// payloads, canonical documents and YAML case files.
//
// The schemas are read from the embedded spec.FS and compiled once, on first
// use; every https://kbkit.dev/schema/ reference resolves to an embedded
// file and nothing is ever fetched from the network.
//
//	if err := schema.ValidateEnvelope(body); err != nil {
//		// 400: err.Error() is e.g. "payload.node: missing; id: is not a lower-case hyphenated uuid"
//	}
//
// A validation failure is an *Error (errors.Is(err, ErrInvalid) holds) that
// lists one plain-words problem per failing field, each starting with the
// field's path. Schemas describe shape only: the reducer still rejects what
// they cannot express (a node that does not exist, a title that is empty
// after normalisation, ...).
package schema
