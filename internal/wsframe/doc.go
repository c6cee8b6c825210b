// Package wsframe is kbkit's one RFC 6455 frame codec, shared by the
// server's /trpc WebSocket (server/wsproto.go), the client's own
// WebSocket (client/ws.go) and the hand-made test clients: frame headers
// read and written, masking, the opcode, reserved-bit, control-frame and
// fragmentation rules, close codes and payloads, and a message reader
// with a read limit over a small buffer. The handshake and the
// connection's lifetime stay with its users. spec/PROTOCOL.md section 5
// says what /trpc speaks over it.
package wsframe
