-- kbkit schema, version 2: command ids are scoped to their workspace, and
-- the text indexes hold a hash of the text, so that no text the protocol
-- accepts exceeds a btree row (spec/PROTOCOL.md sections 4.1 and 8).

ALTER TABLE command_log DROP CONSTRAINT command_log_pkey;
ALTER TABLE command_log ADD PRIMARY KEY (workspace_id, id);

DROP INDEX pages_live_title;
CREATE UNIQUE INDEX pages_live_title ON pages (workspace_id, sha256(title::bytea)) WHERE merged_into IS NULL;

DROP INDEX aliases_lookup;
CREATE INDEX aliases_lookup ON aliases (workspace_id, sha256(alias::bytea));

DROP INDEX links_by_title;
CREATE INDEX links_by_title ON links (workspace_id, sha256(title::bytea));
