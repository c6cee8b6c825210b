package kbcore

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"
)

// uuid is a UUID's 16 bytes. kbcore mints name-based UUIDs (RFC 9562
// version 5) itself rather than through a UUID library, whose random and
// time-based UUIDs pull the network and crypto/rand packages into every
// build of the reducer (the WebAssembly one included).
type uuid [16]byte

// uuidSHA1 is the version-5 UUID of name in namespace ns: the first 16
// bytes of SHA-1(ns, name) with the version and variant bits set.
func uuidSHA1(ns uuid, name []byte) uuid {
	h := sha1.New()
	h.Write(ns[:])
	h.Write(name)
	var u uuid
	copy(u[:], h.Sum(nil))
	u[6] = (u[6] & 0x0f) | 0x50
	u[8] = (u[8] & 0x3f) | 0x80
	return u
}

// String is the 8-4-4-4-12 form in lower case.
func (u uuid) String() string {
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
	return string(b[:])
}

// parseUUID reads s as a UUID in the forms an origin id is taken to be
// one (spec/planner.md section 2, derived ids): hex digits of either case in the
// 8-4-4-4-12 form, that form after "urn:uuid:" (any case) or between one
// character at each end (braces), or 32 hex digits.
func parseUUID(s string) (uuid, bool) {
	var u uuid
	switch len(s) {
	case 32:
	case 36 + 9:
		if !strings.EqualFold(s[:9], "urn:uuid:") {
			return u, false
		}
		s = s[9:]
		fallthrough
	case 36 + 2, 36:
		if len(s) == 38 {
			s = s[1:] // the braces are not checked
		}
		if s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
			return u, false
		}
		s = s[:8] + s[9:13] + s[14:18] + s[19:23] + s[24:36]
	default:
		return u, false
	}
	_, err := hex.Decode(u[:], []byte(s))
	return u, err == nil
}
