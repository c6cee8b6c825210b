package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
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

// Device is an authenticated device.
type Device struct {
	WorkspaceID string `json:"workspace_id"`
	DeviceID    string `json:"device_id"`
}

// PairedDevice is a new device and its bearer token (shown once; only its
// hash is stored).
type PairedDevice struct {
	Device
	Token string `json:"token"`
}

func hashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// PairDevice creates a device (and the workspace, if new) and its token.
func (s *Store) PairDevice(ctx context.Context, workspace string) (PairedDevice, error) {
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return PairedDevice{}, err
	}
	token := "kbk_" + hex.EncodeToString(buf)
	dev := PairedDevice{Token: token}
	dev.DeviceID = uuid.NewString()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `INSERT INTO workspaces (id, name) VALUES ($1, $2)
			ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name RETURNING id`,
			uuid.NewString(), workspace).Scan(&dev.WorkspaceID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO devices (workspace_id, id, token_hash) VALUES ($1, $2, $3)`,
			dev.WorkspaceID, dev.DeviceID, hashToken(token)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, PairChannel, pairedPayload(hashToken(token), dev.Device))
		return err
	})
	if err != nil {
		return PairedDevice{}, fmt.Errorf("store: pair device: %w", classify(err))
	}
	return dev, nil
}

// Authenticate finds the device of a bearer token.
func (s *Store) Authenticate(ctx context.Context, token string) (Device, error) {
	var d Device
	err := s.pool.QueryRow(ctx, `SELECT workspace_id::text, id::text FROM devices WHERE token_hash = $1`,
		hashToken(token)).Scan(&d.WorkspaceID, &d.DeviceID)
	if errors.Is(err, pgx.ErrNoRows) {
		return Device{}, ErrUnauthorized
	}
	if err != nil {
		return Device{}, classify(err)
	}
	return d, nil
}

// ---- revocation ----

// RevokeChannel is the LISTEN/NOTIFY channel of revoked devices; the
// payload is the device id. Every instance drops the device from its auth
// cache and closes its open WebSockets when notified.
const RevokeChannel = "kbkit_revoke"

// RevokeDevice deletes a device (its token stops working) and notifies
// every instance, in one transaction. ErrNotFound when no such device.
func (s *Store) RevokeDevice(ctx context.Context, deviceID string) (Device, error) {
	if _, err := uuid.Parse(deviceID); err != nil {
		return Device{}, ErrNotFound
	}
	devs, err := s.revoke(ctx, `DELETE FROM devices WHERE id = $1 RETURNING workspace_id::text, id::text`, deviceID)
	if err != nil {
		return Device{}, err
	}
	if len(devs) == 0 {
		return Device{}, ErrNotFound
	}
	return devs[0], nil
}

// WorkspaceName returns the name a workspace was created with ("" if it
// has none any more).
func (s *Store) WorkspaceName(ctx context.Context, id string) (string, error) {
	var name string
	err := s.pool.QueryRow(ctx, `SELECT name FROM workspaces WHERE id = $1`, id).Scan(&name)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", classify(err)
	}
	return name, nil
}

// RevokeWorkspace revokes every device of the workspace named name.
func (s *Store) RevokeWorkspace(ctx context.Context, name string) ([]Device, error) {
	return s.revoke(ctx, `DELETE FROM devices WHERE workspace_id = (SELECT id FROM workspaces WHERE name = $1)
		RETURNING workspace_id::text, id::text`, name)
}

func (s *Store) revoke(ctx context.Context, sql string, arg string) ([]Device, error) {
	var devs []Device
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, sql, arg)
		if err != nil {
			return err
		}
		devs, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Device, error) {
			var d Device
			return d, r.Scan(&d.WorkspaceID, &d.DeviceID)
		})
		if err != nil {
			return err
		}
		for _, d := range devs {
			if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, RevokeChannel, d.DeviceID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: revoke: %w", classify(err))
	}
	return devs, nil
}

// DevicesExist reports which of the device ids still exist (an instance
// that lost its LISTEN connection checks its open sockets with it).
func (s *Store) DevicesExist(ctx context.Context, ids []string) (map[string]bool, error) {
	rows, err := s.pool.Query(ctx, `SELECT id::text FROM devices WHERE id = ANY($1::uuid[])`, ids)
	if err != nil {
		return nil, classify(err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, classify(err)
	}
	out := make(map[string]bool, len(found))
	for _, id := range found {
		out[id] = true
	}
	return out, nil
}
