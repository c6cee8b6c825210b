// Package wire holds the shapes of kbkit's wire protocol (spec/PROTOCOL.md)
// that the server, the client and the protocol suite share: procedure
// paths, inputs, answers and events (section 4), the error shape and its
// code table (section 6), and kb.limits' answer (sections 4.6 and 8). It has no codec: the server and the client
// encode and decode their own way; the protocol suite decodes with
// encoding/json as its independent reference. TestSpecTables holds it to
// PROTOCOL.md's tables.
package wire
