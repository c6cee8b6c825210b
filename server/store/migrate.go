package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/subspace/kbkit/kbcore"
)

// goMigrations are the steps of a schema version that SQL cannot do; each
// runs in the migration's transaction right after the version's file.
var goMigrations = map[int]func(ctx context.Context, tx pgx.Tx) error{
	5: canonicalPayloads,
}

// canonicalPayloads rewrites the logged payloads that are not in
// canonical JSON (those logged before version 5 kept the text they were
// sent with, or jsonb's text with spaces). A payload that cannot be
// canonicalized (the wire never let one in) stops the migration, naming
// its command.
func canonicalPayloads(ctx context.Context, tx pgx.Tx) error {
	rows, err := tx.Query(ctx, `SELECT workspace_id::text, id::text, payload::text FROM command_log`)
	if err != nil {
		return err
	}
	type fix struct{ ws, id, payload string }
	var fixes []fix
	for rows.Next() {
		var ws, id, p string
		if err := rows.Scan(&ws, &id, &p); err != nil {
			rows.Close()
			return err
		}
		c, err := kbcore.Canonical([]byte(p))
		if err != nil {
			rows.Close()
			return fmt.Errorf("command %s: payload %.80q: %w", id, p, err)
		}
		if string(c) != p {
			fixes = append(fixes, fix{ws, id, string(c)})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	b := &pgx.Batch{}
	for _, f := range fixes {
		b.Queue(`UPDATE command_log SET payload = $3::json WHERE workspace_id = $1::uuid AND id = $2::uuid`, f.ws, f.id, f.payload)
	}
	if b.Len() == 0 {
		return nil
	}
	return tx.SendBatch(ctx, b).Close()
}
