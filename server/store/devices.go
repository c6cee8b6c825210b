package store

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
)

// PairChannel is the LISTEN/NOTIFY channel of paired devices; the payload
// is "TOKENHASH WORKSPACE DEVICE" (the hex SHA-256 of the token, never the
// token). Every instance adds the device to its token cache when notified,
// so a valid token is known without a query (spec/PROTOCOL.md section 8).
const PairChannel = "kbkit_paired"

// TokenHash is the SHA-256 of a bearer token, the key devices are stored
// and cached under.
type TokenHash [32]byte

// HashToken is the TokenHash of token.
func HashToken(token string) TokenHash { return TokenHash(hashToken(token)) }

// ParsePaired decodes a PairChannel payload.
func ParsePaired(payload string) (TokenHash, Device, error) {
	f := strings.Fields(payload)
	var h TokenHash
	if len(f) != 3 {
		return h, Device{}, fmt.Errorf("store: paired notification %q: want 3 fields", payload)
	}
	b, err := hex.DecodeString(f[0])
	if err != nil || len(b) != len(h) {
		return h, Device{}, fmt.Errorf("store: paired notification %q: bad token hash", payload)
	}
	copy(h[:], b)
	return h, Device{WorkspaceID: f[1], DeviceID: f[2]}, nil
}

func pairedPayload(tokenHash []byte, d Device) string {
	return hex.EncodeToString(tokenHash) + " " + d.WorkspaceID + " " + d.DeviceID
}

// Devices calls fn with every device and its token hash, stopping after
// limit rows (limit <= 0: no limit); it reports whether all were seen.
func (s *Store) Devices(ctx context.Context, limit int, fn func(TokenHash, Device)) (complete bool, err error) {
	q := `SELECT token_hash, workspace_id::text, id::text FROM devices`
	args := []any{}
	if limit > 0 {
		q += ` LIMIT $1`
		args = append(args, limit+1)
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return false, classify(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var raw []byte
		var d Device
		if err := rows.Scan(&raw, &d.WorkspaceID, &d.DeviceID); err != nil {
			return false, classify(err)
		}
		if n++; limit > 0 && n > limit {
			return false, nil
		}
		var h TokenHash
		copy(h[:], raw)
		fn(h, d)
	}
	return true, classify(rows.Err())
}
