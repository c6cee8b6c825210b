-- kbkit schema, version 5: every logged payload is in canonical JSON (RFC
-- 8785, spec/README.md section 1), so that an event's bytes are the same
-- whoever wrote the command and whenever it is replayed (spec/PROTOCOL.md
-- 4.4). Postgres cannot write RFC 8785, so the rows are rewritten by the
-- Go step of this version (canonicalPayloads in migrate.go), in this
-- transaction, after this file.

SELECT 1;
