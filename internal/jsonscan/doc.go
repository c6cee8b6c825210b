// Package jsonscan is kbkit's one JSON scanner: the primitives the fast
// paths of the module share (the reducer's flat payloads and its
// canonical-form check, the client's event decoder, the envelope's
// one-pass validator, the WebAssembly document reader, the hand-written
// encoders' plain-string test). Each fast path reads exactly the shapes
// whose meaning is obvious and declines anything else, which then goes to
// its normative decoder (encoding/json, the JSON Schema validator,
// RFC 8785 as spec/README.md section 1 defines canonical JSON).
//
// Everything here is pure and total: no I/O, no goroutines, no clock, and
// no panic on any input (a Scanner at any position, over any bytes,
// reports false instead). kbcore may therefore import it.
package jsonscan
